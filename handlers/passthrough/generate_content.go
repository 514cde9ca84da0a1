package passthrough

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// GenerateContentMethods are the generate-content protocol's methods on a model that
// mediagw_route forwards, as POST /{version}/models/{model}:{method}.
var GenerateContentMethods = []string{"generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"}

// GenerateContentVersions are the version prefixes the generate-content protocol is served
// under: v1beta, where the Google Gen AI SDK sent it up to its version 2, and v1, where it sends
// it from its version 3 on. Both take the same credentials (auth.IsGenerateContentPath) and the
// same checks, and both go to the provider's base path, whatever version the client named.
var GenerateContentVersions = []string{"v1beta", "v1"}

// generateContentEndpoints are the generate-content protocol's endpoints: every method under
// every version.
func generateContentEndpoints() []Endpoint {
	var eps []Endpoint
	for _, version := range GenerateContentVersions {
		for _, method := range GenerateContentMethods {
			eps = append(eps, Endpoint{Method: http.MethodPost, Path: "/" + version + "/models/{model}:" + method, nested: geminiRefs, modelInBody: true})
		}
	}
	return eps
}

// checkBodyModels checks the models a generate-content body names besides its path's: the
// body's own model (embedContent), that of generateContentRequest (countTokens) and that of
// each of its requests (batchEmbedContents). The protocol writes them as a resource name,
// models/{model}; each must name the path's model, the one that was checked against the key and
// routed by, in that form or bare. A key that differs from model only by case counts as model,
// so whichever spelling an upstream honours was checked; a model that is not a string is refused.
// It reports whether the body names the model at all.
func checkBodyModels(body []byte, pathModel string) (named bool, err error) {
	err = walkError(jsonkeys.WalkValid(body, func(path *jsonkeys.Path, members []jsonkeys.Member) error {
		if !namesModel(path) {
			return nil
		}
		for _, m := range members {
			if !strings.EqualFold(m.Key, "model") {
				continue
			}
			named = true
			field := member(path, m.Key).String()
			var model string
			if err := json.Unmarshal(m.Value, &model); err != nil {
				return apierror.New(http.StatusBadRequest, "invalid_request_body", field+" must be a string").WithParam(field)
			}
			if model != pathModel && model != "models/"+pathModel {
				return apierror.New(http.StatusBadRequest, "invalid_request_body",
					field+" must be the path's model, models/"+pathModel).WithParam(field)
			}
		}
		return nil
	}))
	return named, err
}

// errAliasInBody refuses a generate-content body that names a model the operator maps to another
// id upstream: only the path's model is rewritten, and the provider refuses a body whose model
// differs from the path's.
func errAliasInBody(model string) error {
	return apierror.New(http.StatusBadRequest, "invalid_request_body",
		"model "+model+" is an alias, which this call cannot name in its body; send the provider's model id, or leave the model out of the body").WithParam("model")
}

// namesModel reports whether the object at path may name the model of a generate-content
// call: the body itself, its generateContentRequest (generate_content_request), or one of its
// requests (see batchRequestPath).
func namesModel(path *jsonkeys.Path) bool {
	return path == nil || foldedTop(path, "generateContentRequest") || foldedTop(path, "generate_content_request") || batchRequestPath(path)
}
