package passthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// imageGenerationTool is the type of the Responses tool that generates images with a model of its
// own.
const imageGenerationTool = "image_generation"

// checkToolModels checks the models that a body's tools name: a Responses image_generation tool
// runs its model (gpt-image-1 …) at the upstream besides the request's own, so that model must be
// one the key allows, like the request's. tools is the raw top-level "tools" member (nil when
// absent); one object is read as a list of one, as a lenient upstream may. Each tool object
// follows jsonkeys' rule with "model" and "type" checked (no repeated key, no case variant; the
// refusal names tools[i] and the key); a model that is not a string is refused. An
// image_generation tool that names no model runs the provider's default image model, which the
// gateway cannot know: a key restricted to some models must name one of them (403 otherwise); a
// key that may use every model may leave it to the provider.
func checkToolModels(tools json.RawMessage, id auth.Identity) error {
	if len(tools) == 0 || tools[0] != '[' && tools[0] != '{' {
		return nil
	}
	list := []json.RawMessage{tools}
	if tools[0] == '[' && json.Unmarshal(tools, &list) != nil {
		return nil // the body is valid JSON, so this does not happen
	}
	for i, tool := range list {
		if len(tool) == 0 || tool[0] != '{' {
			continue
		}
		param := fmt.Sprintf("tools[%d].model", i)
		members, err := jsonkeys.MembersValid(tool, "model", "type")
		if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
			field := fmt.Sprintf("tools[%d].%s", i, e.Field)
			return apierror.New(http.StatusBadRequest, "invalid_request_body", field+" is refused: "+e.Error()).WithParam(field)
		} else if err != nil {
			return errBadJSON
		}
		raw, ok := members["model"]
		if !ok || string(raw) == "null" {
			if kind, _ := stringValue(members["type"]); kind == imageGenerationTool && len(id.Models) > 0 {
				return apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may use only some models, and "+
					param+" names none, so the provider would run its default image model: name one this key may use").WithParam(param)
			}
			continue
		}
		model, err := stringValue(raw)
		if err != nil {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", param+" must be a string").WithParam(param)
		}
		if !id.AllowsModel(model) {
			return apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may not use model "+apierror.Echo(model)+" ("+param+")").WithParam(param)
		}
	}
	return nil
}
