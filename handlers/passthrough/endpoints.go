package passthrough

import (
	"net/http"
	"slices"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// postEndpoints are the pass-through capability paths (besides /v1beta/models/{model}:{action}).
// Each takes POST only.
var postEndpoints = []string{
	"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings", "/v1/rerank",
	"/v1/images/generations", "/v1/video/generations", "/v1/videos",
	"/v1/audio/speech", "/v1/audio/transcriptions", "/v1/audio/translations",
}

// checkMethod refuses a capability path called with a method other than POST: 405 with Allow,
// rather than a confusing complaint about the missing model of a GET.
func checkMethod(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodPost {
		return nil
	}
	if slices.Contains(postEndpoints, r.URL.Path) || pathModel.MatchString(r.URL.Path) {
		return apierror.MethodNotAllowed(w, http.MethodPost)
	}
	return nil
}
