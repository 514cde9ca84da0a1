package passthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// imageGenerationTool is the type of the Responses tool that generates images with a model of its
// own.
const imageGenerationTool = "image_generation"

// checkToolModels checks the models that a body's tools name: a Responses image_generation tool
// runs its model (gpt-image-2 …) at the upstream besides the request's own, so that model must be
// one the key allows, like the request's. tools is the raw top-level "tools" member (nil when
// absent); one object is read as a list of one, as a lenient upstream may. Each tool object
// follows jsonkeys' rule with "model", "type", "size" and "quality" checked (no repeated key, no
// case variant; the refusal names tools[i] and the key); a model that is not a string is
// refused. An image_generation tool that names no model runs the provider's default image model,
// which the gateway cannot know: a key restricted to some models must name one of them (403
// otherwise); a key that may use every model may leave it to the provider.
//
// It returns the image_generation tools, each with its model ("" for the provider's default),
// size and quality ("" when absent or not a string), and calls images held (see
// billing.ToolImages).
func checkToolModels(tools json.RawMessage, id auth.Identity, calls int64) ([]billing.ToolImages, error) {
	if len(tools) == 0 || tools[0] != '[' && tools[0] != '{' {
		return nil, nil
	}
	// A list that starts as []json.RawMessage{tools} must not be decoded into: each element
	// would be copied over the body's own bytes, which are forwarded.
	var list []json.RawMessage
	if tools[0] == '{' {
		list = []json.RawMessage{tools}
	} else if json.Unmarshal(tools, &list) != nil {
		return nil, nil // the body is valid JSON, so this does not happen
	}
	var images []billing.ToolImages
	for i, tool := range list {
		if len(tool) == 0 || tool[0] != '{' {
			continue
		}
		param := fmt.Sprintf("tools[%d].model", i)
		members, err := jsonkeys.MembersValid(tool, "model", "type", "size", "quality")
		if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
			field := fmt.Sprintf("tools[%d].%s", i, e.Field)
			return nil, apierror.New(http.StatusBadRequest, "invalid_request_body", field+" is refused: "+e.Error()).WithParam(field)
		} else if err != nil {
			return nil, errBadJSON
		}
		kind, _ := stringValue(members["type"])
		imageTool := kind == imageGenerationTool
		model := ""
		raw, ok := members["model"]
		if !ok || string(raw) == "null" {
			if imageTool && len(id.Models) > 0 {
				return nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may use only some models, and "+
					param+" names none, so the provider would run its default image model: name one this key may use").WithParam(param)
			}
		} else {
			if model, err = stringValue(raw); err != nil {
				return nil, apierror.New(http.StatusBadRequest, "invalid_request_body", param+" must be a string").WithParam(param)
			}
			if !id.AllowsModel(model) {
				return nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may not use model "+apierror.Echo(model)+" ("+param+")").WithParam(param)
			}
		}
		if imageTool {
			images = append(images, billing.ToolImages{Model: model, Size: stringOrEmpty(members["size"]),
				Quality: stringOrEmpty(members["quality"]), Count: calls})
		}
	}
	return images, nil
}

// toolCalls is the number of images an image_generation tool is held for: the body's
// max_tool_calls (the most built-in tool calls the response may make, all tools together; a
// number, or a string holding one, as the other limits are read), else 1. A model may call the
// tool more often without it: the settlement charges every image made.
func toolCalls(fields *bodyFields) int64 {
	if n := numberOrString(fields.value("max_tool_calls")); n > 0 {
		return n
	}
	return 1
}

// defaultToolModel gives the image_generation tools that name no model the model the provider
// runs for them (its tool_image_model, else billing.DefaultToolImageModel), so that their images
// are held and charged at that model's price.
func defaultToolModel(images []billing.ToolImages, providerDefault string) {
	if providerDefault == "" {
		providerDefault = billing.DefaultToolImageModel
	}
	for i := range images {
		if images[i].Model == "" {
			images[i].Model = providerDefault
		}
	}
}
