package passthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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
// A model the gateway does not serve (served false: no provider lists it, nor maps it) is 404
// model_not_found, as the request's own would be: the upstream would run it unpriced, its
// images free.
//
// It returns the image_generation tools, each with its model ("" for the provider's default),
// size and quality ("" when absent or not a string), and calls images held (see
// billing.ToolImages); and the models the tools name, which the provider's model_map may map
// (mapToolModels).
func checkToolModels(tools json.RawMessage, id auth.Identity, calls int64, served func(model string) bool) (images []billing.ToolImages, named []string, err error) {
	if len(tools) == 0 || tools[0] != '[' && tools[0] != '{' {
		return nil, nil, nil
	}
	// A list that starts as []json.RawMessage{tools} must not be decoded into: each element
	// would be copied over the body's own bytes, which are forwarded.
	var list []json.RawMessage
	if tools[0] == '{' {
		list = []json.RawMessage{tools}
	} else if json.Unmarshal(tools, &list) != nil {
		return nil, nil, nil // the body is valid JSON, so this does not happen
	}
	for i, tool := range list {
		if len(tool) == 0 || tool[0] != '{' {
			continue
		}
		param := fmt.Sprintf("tools[%d].model", i)
		members, err := jsonkeys.MembersValid(tool, "model", "type", "size", "quality")
		if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
			field := fmt.Sprintf("tools[%d].%s", i, e.Field)
			return nil, nil, apierror.New(http.StatusBadRequest, "invalid_request_body", field+" is refused: "+e.Error()).WithParam(field)
		} else if err != nil {
			return nil, nil, errBadJSON
		}
		kind, _ := stringValue(members["type"])
		imageTool := kind == imageGenerationTool
		model := ""
		raw, ok := members["model"]
		if !ok || string(raw) == "null" {
			if imageTool && len(id.Models) > 0 {
				return nil, nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may use only some models, and "+
					param+" names none, so the provider would run its default image model: name one this key may use").WithParam(param)
			}
		} else {
			if model, err = stringValue(raw); err != nil {
				return nil, nil, apierror.New(http.StatusBadRequest, "invalid_request_body", param+" must be a string").WithParam(param)
			}
			if !id.AllowsModel(model) {
				return nil, nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may not use model "+apierror.Echo(model)+" ("+param+")").WithParam(param)
			}
			if !served(model) {
				return nil, nil, apierror.New(http.StatusNotFound, "model_not_found", "the model "+apierror.Echo(model)+" ("+param+") does not exist or is not served here").WithParam(param)
			}
			named = append(named, model)
		}
		if imageTool {
			images = append(images, billing.ToolImages{Model: model, Size: stringOrEmpty(members["size"]),
				Quality: stringOrEmpty(members["quality"]), Count: calls})
		}
	}
	return images, named, nil
}

// served reports whether a provider of the catalog serves model (lists it, or maps it).
func (rt *Router) served(model string) bool {
	_, ok := rt.Catalog.ProviderFor(model)
	return ok
}

// toolCalls is the number of images an image_generation tool is held for: none when the body's
// tool_choice keeps the model from calling it (toolChoiceExcludesImages), else the body's
// max_tool_calls (the most built-in tool calls the response may make, all tools together; a
// number, or a string holding one, as the other limits are read), else 1. A model may call the
// tool more often without it: the settlement charges every image made, held or not.
func toolCalls(fields *bodyFields) int64 {
	if toolChoiceExcludesImages(fields.value("tool_choice")) {
		return 0
	}
	if n := numberOrString(fields.value("max_tool_calls")); n > 0 {
		return n
	}
	return 1
}

// boundToolCalls gives the image_generation tools the request's max_tool_calls (a number, or a
// string holding one; 0 when it has none), past which the provider makes no image: an answer
// that reports more is charged that many (billing.MadeImages.Within).
func boundToolCalls(images []billing.ToolImages, fields *bodyFields) {
	most := numberOrString(fields.value("max_tool_calls"))
	for i := range images {
		images[i].MaxCalls = most
	}
}

// backgroundResponse reports whether a Responses body's background member asks for a background
// response: true, or what a lenient upstream (pydantic's lax mode) reads as true: a number equal
// to 1 however written (1, 1.0, 1e0), or a string "true", "1", "yes", "on", "t" or "y" in any
// letter case.
func backgroundResponse(raw json.RawMessage) bool {
	switch string(raw) {
	case "true", "1":
		return true
	}
	if len(raw) > 0 && (raw[0] >= '0' && raw[0] <= '9') {
		f, err := strconv.ParseFloat(string(raw), 64)
		return err == nil && f == 1
	}
	s, err := stringValue(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on", "t", "y":
		return true
	}
	return false
}

// errBackgroundImagesUnbounded refuses a background response whose image_generation tool may
// make any number of images.
var errBackgroundImagesUnbounded = apierror.New(http.StatusBadRequest, "invalid_request_body",
	"a background response with an image_generation tool must set max_tool_calls: it is charged the images it may make, "+
		"which without max_tool_calls have no bound").WithParam("max_tool_calls")

// backgroundImagesBounded refuses a background response whose image_generation tool may be
// called (images held) without max_tool_calls: such a response is answered before it makes
// anything, and charged what it may make (its estimate), since its images come later, through
// retrieves that charge nothing; without max_tool_calls the model may call the tool any number
// of times, more than any hold.
func backgroundImagesBounded(background bool, images []billing.ToolImages) error {
	if !background {
		return nil
	}
	for _, t := range images {
		if t.Count > 0 && t.MaxCalls == 0 {
			return errBackgroundImagesUnbounded
		}
	}
	return nil
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

// toolChoiceExcludesImages reports whether a Responses tool_choice keeps the model from calling
// an image_generation tool, per OpenAI's reference: "none" (the model calls no tool); a choice
// that forces another tool ({"type":"function","name":…}, a hosted tool of another type, mcp,
// custom …); or allowed_tools whose list has no image_generation tool. "auto", "required", a
// forced image_generation, and anything the gateway cannot read unambiguously (a repeated or
// case-variant key) do not: the tool's images are held.
func toolChoiceExcludesImages(choice json.RawMessage) bool {
	if len(choice) == 0 {
		return false
	}
	if choice[0] == '"' {
		mode, err := stringValue(choice)
		return err == nil && mode == "none"
	}
	if choice[0] != '{' {
		return false
	}
	members, err := jsonkeys.MembersValid(choice, "type", "tools")
	if err != nil {
		return false
	}
	kind, err := stringValue(members["type"])
	switch {
	case err != nil || kind == "" || kind == imageGenerationTool:
		return false
	case kind != "allowed_tools":
		return true // another tool is forced
	}
	var allowed []json.RawMessage
	if json.Unmarshal(members["tools"], &allowed) != nil {
		return false
	}
	for _, tool := range allowed {
		if len(tool) == 0 || tool[0] != '{' {
			return false
		}
		m, err := jsonkeys.MembersValid(tool, "type")
		if err != nil {
			return false
		}
		if kind, err := stringValue(m["type"]); err != nil || kind == imageGenerationTool {
			return false
		}
	}
	return true
}
