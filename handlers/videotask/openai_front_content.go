package videotask

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// Variants of a video's content (GET /v1/videos/{id}/content?variant=…).
const (
	VariantVideo       = "video"
	VariantThumbnail   = "thumbnail"
	VariantSpritesheet = "spritesheet"
)

var (
	errNoThumbnail = apierror.New(http.StatusNotFound, "not_found", "this video has no thumbnail: its model made no last frame")
	errNoSprites   = apierror.New(http.StatusNotFound, "not_found", "spritesheets are not made by the providers behind this gateway")
	errNotComplete = apierror.New(http.StatusConflict, "video_not_completed", "the video has no content: it has not completed")
)

// content answers GET /v1/videos/{id}/content for the video's owner. The variant video is the
// task's result and thumbnail its last frame (asked for at every create of this front, made
// where the model supports it). A result that any client can fetch is answered with a redirect
// (302) to its address, which only the owner learns; a result that needs the operator's
// credential (the task API's owner-only content endpoint, see ContentURL) is streamed from the
// provider, without the credential or the provider's address reaching the client.
func (f *VideosFront) content(w http.ResponseWriter, r *http.Request, id auth.Identity, videoID string) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apierror.New(http.StatusBadRequest, "invalid_request", "the query string is malformed")
	}
	for name := range q {
		if name != "variant" || len(q[name]) > 1 {
			return frontInvalid(name, "is not a parameter of this endpoint, or is given more than once (accepted: variant)")
		}
	}
	variant := q.Get("variant")
	switch variant {
	case "", VariantVideo, VariantThumbnail:
	case VariantSpritesheet:
		return errNoSprites
	default:
		return frontInvalid("variant", "must be video, thumbnail or spritesheet")
	}
	h := f.Tasks
	t, err := h.owned(r.Context(), id, videoID)
	if err != nil {
		return err
	}
	if t, err = h.current(t); err != nil {
		return err
	}
	var answer struct {
		Status  json.RawMessage `json:"status"`
		Content struct {
			VideoURL     string `json:"video_url"`
			LastFrameURL string `json:"last_frame_url"`
		} `json:"content"`
	}
	if err := json.Unmarshal(h.frontAnswer(r.Context(), t), &answer); err != nil {
		return err
	}
	if t.Status != StatusSucceeded || answerStatus(answer.Status) != StatusSucceeded {
		return errNotComplete
	}
	target := answer.Content.VideoURL
	if variant == VariantThumbnail {
		if target = answer.Content.LastFrameURL; target == "" {
			return errNoThumbnail
		}
	}
	if target == h.ContentURL(t.ID) {
		return h.content(w, r, id, t.ID) // the owner-only stream of a credentialed result
	}
	if u, err := url.Parse(target); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		// The provider's answer named its result with something that is no address to send a
		// client to (another scheme, a relative path, a broken URL): the upstream's fault, not
		// the gateway's. The address itself is not logged (it may be a signed URL).
		h.Logger.Warn("a video's result is not an absolute http(s) URL; its content answers 502",
			zap.String("task_id", t.ID), zap.String("variant", cmp.Or(variant, VariantVideo)))
		return upstream.ErrUnreadable
	}
	w.Header().Set("Location", target)
	w.Header().Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusFound)
	return nil
}
