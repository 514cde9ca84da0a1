package passthrough

import (
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/providers"
)

// mapsToolModels reports whether the provider's model_map names one of the models the body's
// tools name (Route.toolModelNames): those tools must reach the upstream under its names.
func mapsToolModels(p *providers.Provider, names []string) bool {
	for _, name := range names {
		if p.UpstreamModel(name) != name {
			return true
		}
	}
	return false
}

// mapToolModels puts the upstream's model id where a tool of the JSON body names a client's id
// the provider's model_map maps ("tools":[{"type":"image_generation","model":"…"}]), as mapModel
// does for the top-level "model": only those values' bytes change, so what is forwarded is what
// checkToolModels checked. Pricing keeps the client's ids (Route.ToolImages).
func mapToolModels(r *http.Request, p *providers.Provider) error {
	if r.GetBody == nil {
		return nil
	}
	body, err := replayedBytes(r)
	if err != nil {
		return err
	}
	mapped, ok := replaceToolModels(body, p.UpstreamModel)
	if !ok {
		return errBadJSON // the body was checked as JSON: this does not happen
	}
	setBody(r, mapped)
	return nil
}

// replayedBytes is r's body: the bytes Route checked when r replays them, else read again from
// r.GetBody.
func replayedBytes(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*replayedBody); ok {
		return b.body, nil
	}
	orig, err := r.GetBody()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(orig)
}

// setBody makes body r's body, replayable, with its length.
func setBody(r *http.Request, body []byte) {
	replay := &replayedBody{body: body}
	replay.Reset(body)
	r.Body, r.GetBody = replay, replay.again // a later rewrite reads it without a copy (replayedBytes)
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

// replaceToolModels returns body with each string "model" member of the objects of its top-level
// "tools" (a list, or one object as checkToolModels reads it) replaced by upstream of it
// (providers.ReplaceToolModels). The other bytes stay as they were. ok is false when body is not
// one JSON object.
func replaceToolModels(body []byte, upstream func(string) string) ([]byte, bool) {
	return providers.ReplaceToolModels(body, func(model string) (string, bool) { return upstream(model), true })
}

// answerToolModels maps the upstream ids of tool models that an answer on path may show back to
// the client's ids (providers.Dispatch.ToolModels): on the Responses endpoints, whose answers echo
// the tools of the response's create, the provider's model_map read backwards, each of names (the
// request's own tool models) shown as itself. nil elsewhere, and for a create whose tools name no
// model (its answer shows none).
func answerToolModels(p *providers.Provider, path string, names []string) map[string]string {
	clients := p.ClientModels()
	if len(clients) == 0 || !isResponsesPath(path) || path == "/v1/responses" && len(names) == 0 {
		return nil
	}
	var own map[string]string
	for _, name := range names {
		if up := p.UpstreamModel(name); up != name && clients[up] != name {
			if own == nil {
				own = maps.Clone(clients)
			}
			own[up] = name
		}
	}
	if own != nil {
		return own
	}
	return clients
}

// isResponsesPath reports whether path is /v1/responses or under it.
func isResponsesPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/responses")
	return ok && (rest == "" || rest[0] == '/')
}
