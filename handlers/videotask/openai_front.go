package videotask

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// VideosPath is the collection path of the OpenAI-style video API.
const VideosPath = "/v1/videos"

// VideosFront serves the OpenAI-style video API over the task table: POST /v1/videos, GET
// /v1/videos (the caller's own, paged by cursor), GET and DELETE /v1/videos/{id}, and GET
// /v1/videos/{id}/content. A create goes through the task API's one create path (checks,
// limits, billing hold, idempotency, ownership, callbacks, the watcher) to any provider and
// protocol; a video's id is its task id, so the task API and this front see the same tasks.
// Errors are in OpenAI's shape; another account's video gets the answer of an unknown id (404).
//
// Requests for models of the providers named in PassThrough are left to the next handler
// (mediagw_route), which forwards them to a provider that serves /v1/videos itself, as do the
// calls on the videos it created there (records of PassThroughKind).
type VideosFront struct {
	Tasks *Handler
	// PassThrough names the providers whose /v1/videos requests pass through.
	PassThrough []string
	// PassThroughKind is the record kind of the videos that pass-through created.
	PassThroughKind string
}

// Next is the handler after the front, which gets the requests the front leaves alone.
type Next func(w http.ResponseWriter, r *http.Request) error

var (
	errVideoNotFound = apierror.New(http.StatusNotFound, "not_found", "no video with this id exists for this account")
	errVideosPath    = apierror.New(http.StatusNotFound, "not_found", "no such endpoint of the video API")
)

// ServeHTTP serves a request under VideosPath, or hands it to next.
func (f *VideosFront) ServeHTTP(w http.ResponseWriter, r *http.Request, next Next) error {
	id, ok := auth.FromContext(r.Context())
	if !ok {
		apierror.Write(w, apierror.OpenAIShape, auth.ErrMissingKey)
		return nil
	}
	_, rest, found := strings.Cut(r.URL.Path, VideosPath)
	if !found || rest != "" && rest[0] != '/' {
		f.refuse(w, errVideosPath)
		return nil
	}
	var segs []string
	if rest != "" {
		// An empty segment (a trailing or doubled slash, /v1/videos/ included) is no endpoint.
		if segs = strings.Split(rest[1:], "/"); slices.Contains(segs, "") {
			f.refuse(w, errVideosPath)
			return nil
		}
	}
	var err error
	switch {
	case len(segs) == 0 && r.Method == http.MethodPost:
		return f.create(w, r, id, next)
	case len(segs) == 0 && r.Method == http.MethodGet:
		err = f.list(w, r, id)
	case len(segs) == 0:
		err = apierror.MethodNotAllowed(w, http.MethodGet, http.MethodPost)
	default:
		return f.serveVideo(w, r, id, segs, next)
	}
	if err != nil {
		f.refuse(w, err)
	}
	return nil
}

// serveVideo serves the calls on one video: /{id} and /{id}/content; any other is the next
// handler's for a pass-through video, and unknown here.
func (f *VideosFront) serveVideo(w http.ResponseWriter, r *http.Request, id auth.Identity, segs []string, next Next) error {
	videoID := segs[0]
	if f.passedThrough(r, id, videoID) {
		return next(w, r)
	}
	var err error
	switch {
	case len(segs) == 1 && r.Method == http.MethodGet:
		err = f.retrieve(w, r, id, videoID)
	case len(segs) == 1 && r.Method == http.MethodDelete:
		err = f.delete(w, r, id, videoID)
	case len(segs) == 1:
		err = apierror.MethodNotAllowed(w, http.MethodGet, http.MethodDelete)
	case len(segs) == 2 && segs[1] == "content" && r.Method == http.MethodGet:
		err = f.content(w, r, id, videoID)
	case len(segs) == 2 && segs[1] == "content":
		err = apierror.MethodNotAllowed(w, http.MethodGet)
	default:
		err = errVideosPath
	}
	if err != nil {
		f.refuse(w, err)
	}
	return nil
}

// passedThrough reports whether a video id names a video that pass-through created for the
// caller's account.
func (f *VideosFront) passedThrough(r *http.Request, id auth.Identity, videoID string) bool {
	if len(f.PassThrough) == 0 || videoID == "" {
		return false
	}
	t, err := f.Tasks.Store.Task(r.Context(), videoID)
	return err == nil && t.Kind == f.PassThroughKind && id.Sees(t.Account, t.Model)
}

// refuse answers err in OpenAI's shape; an unknown or another account's task is 404.
func (f *VideosFront) refuse(w http.ResponseWriter, err error) {
	if errors.Is(err, errTaskNotExist) {
		err = errVideoNotFound
	}
	apierror.Respond(w, apierror.OpenAIShape, f.Tasks.Logger, frontError(err))
}

// create answers POST /v1/videos with the new video object, once its task is created and owned.
func (f *VideosFront) create(w http.ResponseWriter, r *http.Request, id auth.Identity, next Next) error {
	h := f.Tasks
	boundary, multipartBody := formBoundary(r)
	if !multipartBody && !apierror.IsJSON(r) {
		f.refuse(w, bodyTypeError(r))
		return nil
	}
	if len(f.PassThrough) > 0 {
		pass, err := f.passes(w, r, id, boundary, multipartBody)
		if err != nil {
			f.refuse(w, err)
			return nil
		}
		if pass {
			return next(w, r)
		}
	}
	serve := func(w http.ResponseWriter, r *http.Request) {
		v, err := f.readCreate(w, r, boundary, multipartBody)
		if err == nil {
			err = f.createVideo(w, r, id, v)
		}
		if err != nil {
			f.refuse(w, err)
		}
	}
	if h.Idempotency != nil {
		modelOf := idempotency.JSONModel
		if multipartBody {
			modelOf = func(body []byte) string {
				return formModel(bytes.NewReader(body), boundary, h.maxBody(), new(bytes.Buffer))
			}
		}
		h.Idempotency.ServeFor(w, r, id.Account+"/videos", apierror.OpenAIShape, h.maxBody(), h.modelGate(id, modelOf, f.refuse), serve)
		return nil
	}
	serve(w, r)
	return nil
}

// readCreate reads the create body, JSON or multipart.
func (f *VideosFront) readCreate(w http.ResponseWriter, r *http.Request, boundary string, multipartBody bool) (VideoRequest, error) {
	if multipartBody {
		return ReadVideoForm(r.Body, boundary, f.Tasks.maxBody())
	}
	body, err := apierror.ReadBody(w, r, f.Tasks.maxBody(), "invalid_request_body")
	if err != nil {
		return VideoRequest{}, err
	}
	return ParseVideoJSON(body)
}

// createVideo creates the task of a read request and answers its video object.
func (f *VideosFront) createVideo(w http.ResponseWriter, r *http.Request, id auth.Identity, v VideoRequest) error {
	body, err := v.ArkBody()
	if err != nil {
		return err
	}
	req, err := ParseCreate(body)
	if err != nil {
		return err
	}
	t, err := f.Tasks.createTask(r, id, req, true)
	if err != nil {
		return err
	}
	writeJSON(w, f.Tasks.frontVideo(r.Context(), t))
	return nil
}

// passes reports whether a create is for a model of a pass-through provider. The body is read
// (up to the model, for a multipart one) and given back to r whole.
func (f *VideosFront) passes(w http.ResponseWriter, r *http.Request, id auth.Identity, boundary string, multipartBody bool) (bool, error) {
	var model string
	if multipartBody {
		var read bytes.Buffer
		model = formModel(r.Body, boundary, f.Tasks.maxBody(), &read)
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(&read, r.Body), r.Body}
	} else {
		body, err := apierror.ReadBody(w, r, f.Tasks.maxBody(), "invalid_request_body")
		if err != nil {
			return false, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		m, err := jsonkeys.Members(body, "model")
		if err != nil {
			return false, nil // the front answers what is wrong with it
		}
		model, _ = jsonString(m["model"])
	}
	if model == "" {
		return false, nil
	}
	p, err := f.Tasks.Catalog.Serving(model, id.AllowsModel)
	return err == nil && slices.Contains(f.PassThrough, p.Name), nil
}

// Interface guards
var _ interface {
	ServeHTTP(http.ResponseWriter, *http.Request, Next) error
} = (*VideosFront)(nil)
