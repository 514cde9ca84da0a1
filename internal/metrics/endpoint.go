package metrics

import "strings"

// fixedEndpoints are the gateway's paths without a variable part.
var fixedEndpoints = map[string]string{}

func init() {
	for _, p := range []string{
		"/v1/models", "/v1/upload/presign", "/v1/images/edits",
		"/api/v3/contents/generations/tasks",
		"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings", "/v1/rerank",
		"/v1/images/generations", "/v1/video/generations", "/v1/videos",
		"/v1/audio/speech", "/v1/audio/transcriptions", "/v1/audio/translations",
		// Endpoints an operator may add (see docs/providers.md) under a prefix whose other
		// paths name an object: each is its own label, not the object's nor "other".
		"/v1/responses/input_tokens", "/v1/responses/compact",
		"/v1/messages/count_tokens", "/v1/messages/batches",
	} {
		fixedEndpoints[p] = p
	}
}

// Endpoint turns a request path into the endpoint label: the path itself for fixed paths, a
// template such as /api/v3/contents/generations/tasks/{id} for paths with an id or a model in
// them, and "other" for anything else, so that clients cannot create label values.
func Endpoint(path string) string {
	if e, ok := fixedEndpoints[strings.TrimSuffix(path, "/")]; ok {
		return e
	}
	for _, t := range []struct{ prefix, template string }{
		{"/api/v3/contents/generations/tasks/", "/api/v3/contents/generations/tasks/{id}"},
		{"/v1/images/tasks/", "/v1/images/tasks/{id}"},
		{"/v1/videos/", "/v1/videos/{id}"},
		{"/v1/video/generations/", "/v1/video/generations/{id}"},
		{"/v1/responses/", "/v1/responses/{id}"},
	} {
		if strings.HasPrefix(path, t.prefix) {
			return t.template
		}
	}
	for _, prefix := range []string{"/v1beta/models/", "/v1/models/"} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		model, method, isMethod := strings.Cut(rest, ":")
		switch {
		case isMethod && model != "" && modelMethods[method]:
			return prefix + "{model}:" + method
		case !isMethod && prefix == "/v1/models/" && rest != "":
			return "/v1/models/{id}"
		}
	}
	return "other"
}

// modelMethods are the generate-content protocol's methods on a model that the gateway serves,
// under /v1beta/models/ and /v1/models/.
var modelMethods = map[string]bool{
	"generateContent": true, "streamGenerateContent": true, "countTokens": true, "embedContent": true, "batchEmbedContents": true,
}
