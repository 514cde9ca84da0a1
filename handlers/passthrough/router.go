// Package passthrough prepares requests for the capabilities mediagw passes through to providers
// with Caddy's reverse_proxy (chat, responses, messages, generateContent, images, videos, audio,
// embeddings, rerank). It finds the model, checks it against the caller's key, picks the provider
// that serves it, and rewrites the request for that provider: its credentials and its path prefix.
// The body reaches the upstream byte for byte as the client sent it.
package passthrough

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

// Defaults of the Router's bounds.
const (
	DefaultMaxJSONBytes = 32 << 20
	DefaultSpoolMemory  = 1 << 20
	maxModelFieldBytes  = 512
)

// Router routes pass-through requests. Fill the exported fields, then call Route.
type Router struct {
	Catalog *providers.Catalog
	// MaxJSONBytes bounds a JSON body, which is read whole to find the model. Past it: 413.
	MaxJSONBytes int64
	// SpoolMemory is how much of a multipart body is kept in memory while looking for the model
	// field; beyond it the prefix is spooled to a temporary file in TempDir.
	SpoolMemory int64
	TempDir     string
}

// Route is the outcome of routing one request.
type Route struct {
	Model    string
	Provider *providers.Provider
	// Dispatch is the request's way through the provider's upstreams.
	Dispatch *providers.Dispatch
	// Done releases what routing held (a spool file); call it when the request is finished.
	Done func()
}

// pathModel matches Gemini-style /v1beta/models/{model}:{action}.
var pathModel = regexp.MustCompile(`^/v1[a-z0-9]*/models/([^/:]+):([A-Za-z]+)$`)

var (
	errNoModel   = apierror.New(http.StatusBadRequest, "missing_model", "model is required: give it in the JSON body, the multipart field \"model\", or the path").WithParam("model")
	errBadJSON   = apierror.New(http.StatusBadRequest, "invalid_request_body", "the body is not valid JSON")
	errModelType = apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be a string").WithParam("model")
	errMultipart = apierror.New(http.StatusBadRequest, "invalid_request_body", "the multipart body is malformed")
)

// Route finds the model of r, checks it against the identity's allow-list and the catalog, and
// rewrites r for the provider: its credentials replace the caller's, its base path replaces the
// client's version prefix, and the body is replayed unchanged. A refusal is an *apierror.Error.
func (rt *Router) Route(w http.ResponseWriter, r *http.Request, id auth.Identity) (Route, error) {
	route := Route{Done: func() {}}
	model, err := rt.findModel(w, r, &route)
	if err != nil {
		route.Done()
		return Route{}, err
	}
	p, err := rt.Catalog.Serving(model, id.AllowsModel)
	if err != nil {
		route.Done()
		return Route{}, err
	}
	route.Model, route.Provider = model, p
	if err := rt.dispatch(r, &route); err != nil {
		route.Done()
		return Route{}, err
	}
	return route, nil
}

// findModel takes the model from the path, the JSON body or the multipart field "model".
func (rt *Router) findModel(w http.ResponseWriter, r *http.Request, route *Route) (string, error) {
	if m := pathModel.FindStringSubmatch(r.URL.Path); m != nil {
		return m[1], nil
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return rt.jsonModel(w, r)
	case mt == "multipart/form-data" && params["boundary"] != "":
		return rt.multipartModel(r, params["boundary"], route)
	}
	return "", errNoModel
}

func (rt *Router) jsonModel(w http.ResponseWriter, r *http.Request) (string, error) {
	limit := rt.MaxJSONBytes
	if limit <= 0 {
		limit = DefaultMaxJSONBytes
	}
	body, err := apierror.ReadBody(w, r, limit, "invalid_request_body")
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	var fields struct {
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return "", errBadJSON
	}
	if len(fields.Model) == 0 || string(fields.Model) == "null" {
		return "", errNoModel
	}
	var model string
	if err := json.Unmarshal(fields.Model, &model); err != nil {
		return "", errModelType
	}
	if model == "" {
		return "", errNoModel
	}
	return model, nil
}

// multipartModel reads parts until the "model" field, keeping what it read in a spool, then
// replays the spooled prefix followed by the unread rest of the body.
func (rt *Router) multipartModel(r *http.Request, boundary string, route *Route) (string, error) {
	memLimit := rt.SpoolMemory
	if memLimit <= 0 {
		memLimit = DefaultSpoolMemory
	}
	sp := &spool{memLimit: memLimit, dir: rt.TempDir}
	original := r.Body
	route.Done = func() { sp.Close() }
	mr := multipart.NewReader(io.TeeReader(original, sp), boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return "", errNoModel
		}
		if err != nil {
			return "", errMultipart
		}
		if part.FormName() != "model" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return "", errMultipart
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, maxModelFieldBytes+1))
		if err != nil || len(value) > maxModelFieldBytes {
			return "", errMultipart
		}
		prefix, err := sp.reader()
		if err != nil {
			return "", err
		}
		r.Body = replayBody{Reader: io.MultiReader(prefix, original), Closer: original}
		model := strings.TrimSpace(string(value))
		if model == "" {
			return "", errNoModel
		}
		return model, nil
	}
}

// rewrite points r at an upstream: credentials and path prefix. The caller's credentials, and a
// Gemini-style ?key= parameter, are removed.
func rewrite(r *http.Request, p *providers.Upstream) {
	p.SetCredentials(r.Header)
	if q := r.URL.Query(); q.Has("key") {
		q.Del("key")
		r.URL.RawQuery = q.Encode()
	}
	rest := r.URL.Path
	if seg, after, ok := strings.Cut(strings.TrimPrefix(rest, "/"), "/"); ok && isVersion(seg) {
		rest = "/" + after
	}
	r.URL.Path = strings.TrimSuffix(p.BaseURL.Path, "/") + rest
	r.URL.RawPath = ""
}

// isVersion reports whether a path segment is an API version prefix such as v1 or v1beta.
func isVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' || seg[1] < '0' || seg[1] > '9' {
		return false
	}
	return strings.IndexFunc(seg[1:], func(c rune) bool { return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') }) < 0
}
