package passthrough

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/storage"
)

// Kinds of upstream objects that pass-through creates, kept as task records of these kinds so
// that only the creating account can use them. Asynchronous image generations are image tasks
// (storage.KindImage), the same kind as image edit tasks.
const (
	KindResponse        = "response"         // POST /v1/responses
	KindVideo           = "video_job"        // POST /v1/videos
	KindVideoGeneration = "video_generation" // POST /v1/video/generations
)

// Endpoint is one method and path that mediagw_route forwards. Everything else is 404.
type Endpoint struct {
	Method string
	// Path is matched segment by segment. A segment may be a parameter: {model} or {id}, or
	// {model}:action for Gemini-style paths (/v1beta/models/{model}:generateContent).
	Path string
	// Creates is the kind of upstream object a successful answer creates; its id is recorded as
	// the caller's account's before the client sees it.
	Creates string
	// RevealsItems is set where a successful answer hands the caller items that carry ids (a
	// response's output, a list of its input items): they are recorded as the caller's account's
	// (see items.go).
	RevealsItems bool
	// Object is the kind of the owned upstream object named by {id}. Such requests need no model:
	// the object's record gives the model and provider, and only its account may use it.
	Object string
	// Refs are body fields that name upstream objects, by kind; each must be the caller's own.
	Refs map[string]string
	// Multipart endpoints take multipart/form-data bodies (file uploads); every other endpoint
	// takes JSON only, so that an upstream reading the body as JSON whatever its Content-Type
	// cannot see bytes the gateway skipped as a multipart preamble.
	Multipart bool
	// nested finds references to upstream objects deeper in a JSON body (see refs.go).
	nested *bodyRefs
	// fetchesURLs marks an endpoint whose provider may fetch any string of its JSON body: every
	// URL in it, outside free text members, must be one the provider may fetch (see
	// checkFetchedURLs). The free text members are a media generation body's (prompt …), or,
	// with dialogue, those of chat, embeddings, rerank and speech (content, input …).
	fetchesURLs, dialogue bool
	// batch marks a Message Batches create, whose requests each hold a Messages body with its
	// own model (see batches.go).
	batch bool
	// modelInBody marks a generate-content endpoint, whose body may name the path's model again,
	// as a resource name, in several places (see checkBodyModels).
	modelInBody bool
	// toolModels marks an endpoint whose tools may name a model the upstream runs besides the
	// request's (a Responses image_generation tool's model; see checkToolModels).
	toolModels bool
	// countsTokens marks a count of a request's input tokens, which generates nothing and which
	// the providers do not bill: it holds and charges nothing (see usedFor).
	countsTokens bool
	// inputOnly marks an embedding or a rerank, which reads input tokens and makes no output:
	// it is held and charged no output tokens (see usedFor).
	inputOnly bool
	// reranks marks a rerank (a last segment rerank), whose query and documents bound its
	// hold (see rerankSizing).
	reranks bool
}

// usedFor classifies an endpoint by the shape of its path's last segment, for built-in and
// operator-added endpoints alike: a count of input tokens (Gemini's {model}:countTokens,
// Anthropic's /v1/messages/count_tokens, OpenAI's /v1/responses/input_tokens: any path whose
// last segment is count_tokens or input_tokens, or whose action is countTokens), or a call that
// reads input and makes no output tokens (a last segment embeddings or rerank, as
// /v1/embeddings and /v1/rerank, or the action embedContent or batchEmbedContents). Everything
// else is a generation.
func usedFor(path string) (countsTokens, inputOnly bool) {
	last := path[strings.LastIndexByte(path, '/')+1:]
	if _, action, ok := strings.Cut(last, ":"); ok {
		last = action
	}
	switch last {
	case "countTokens", "count_tokens", "input_tokens":
		return true, false
	case "embedContent", "batchEmbedContents", "embeddings", "rerank":
		return false, true
	}
	return false, false
}

// classified is ep with what usedFor says of its path.
func classified(ep Endpoint) Endpoint {
	ep.countsTokens, ep.inputOnly = usedFor(ep.Path)
	ep.reranks = ep.inputOnly && strings.HasSuffix(ep.Path, "/rerank")
	return ep
}

// classifiedAll classifies each endpoint of list in place (see usedFor), and returns list.
func classifiedAll(list []Endpoint) []Endpoint {
	for i := range list {
		list[i] = classified(list[i])
	}
	return list
}

// Capabilities are the pass-through endpoints of spec §4.6, with generateContent's family
// (generateContentEndpoints), followed by the calls on upstream objects that the caller's account
// owns, each classified by its path (usedFor).
var Capabilities = classifiedAll(append(generateContentEndpoints(), []Endpoint{
	{Method: http.MethodPost, Path: "/v1/chat/completions", nested: chatRefs, fetchesURLs: true, dialogue: true},
	{Method: http.MethodPost, Path: "/v1/responses", Creates: KindResponse, RevealsItems: true, Refs: map[string]string{"previous_response_id": KindResponse}, nested: responsesRefs, toolModels: true},
	{Method: http.MethodPost, Path: "/v1/messages", nested: messagesRefs},
	{Method: http.MethodPost, Path: "/v1/images/generations", Creates: storage.KindImage, nested: fileRefs, fetchesURLs: true},
	{Method: http.MethodPost, Path: "/v1/video/generations", Creates: KindVideoGeneration, nested: fileRefs, fetchesURLs: true},
	{Method: http.MethodPost, Path: "/v1/videos", Creates: KindVideo, Multipart: true, nested: fileRefs, fetchesURLs: true},
	{Method: http.MethodPost, Path: "/v1/audio/transcriptions", Multipart: true},
	{Method: http.MethodPost, Path: "/v1/audio/translations", Multipart: true},
	{Method: http.MethodPost, Path: "/v1/audio/speech", nested: mediaRefs, fetchesURLs: true, dialogue: true},
	{Method: http.MethodPost, Path: "/v1/embeddings", nested: mediaRefs, fetchesURLs: true, dialogue: true},
	{Method: http.MethodPost, Path: "/v1/rerank", nested: mediaRefs, fetchesURLs: true, dialogue: true},

	{Method: http.MethodGet, Path: "/v1/responses/{id}", Object: KindResponse, RevealsItems: true},
	{Method: http.MethodDelete, Path: "/v1/responses/{id}", Object: KindResponse},
	{Method: http.MethodGet, Path: "/v1/responses/{id}/input_items", Object: KindResponse, RevealsItems: true},
	{Method: http.MethodPost, Path: "/v1/responses/{id}/cancel", Object: KindResponse, RevealsItems: true},
	{Method: http.MethodGet, Path: "/v1/videos/{id}", Object: KindVideo},
	{Method: http.MethodDelete, Path: "/v1/videos/{id}", Object: KindVideo},
	{Method: http.MethodGet, Path: "/v1/videos/{id}/content", Object: KindVideo},
	{Method: http.MethodPost, Path: "/v1/videos/{id}/remix", Object: KindVideo, Creates: KindVideo},
	{Method: http.MethodGet, Path: "/v1/video/generations/{id}", Object: KindVideoGeneration},
	{Method: http.MethodGet, Path: "/v1/images/tasks/{id}", Object: storage.KindImage},
}...))

// ParseEndpoint checks an operator's extra endpoint: an upper-case method and an absolute path
// without wildcards, queries or dot segments; a segment may be {model} or {model}:action. Such an
// endpoint is forwarded like the capabilities: the request must name a model the key allows, and
// its body may name only the caller's objects (see extending).
func ParseEndpoint(method, path string) (Endpoint, error) {
	if method == "" || strings.ToUpper(method) != method || strings.ContainsAny(method, " */") {
		return Endpoint{}, fmt.Errorf("endpoint method %q must be one upper-case HTTP method such as POST", method)
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "*?#% ") || strings.Contains(path, "//") {
		return Endpoint{}, fmt.Errorf("endpoint path %q must be an absolute path without *, ?, #, %%, spaces or empty segments", path)
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "." || seg == ".." {
			return Endpoint{}, fmt.Errorf("endpoint path %q must not have dot segments", path)
		}
		if strings.Contains(seg, "{") && !strings.HasPrefix(seg, "{model}") {
			return Endpoint{}, fmt.Errorf("endpoint path %q: the only parameter is {model}", path)
		}
	}
	if strings.Contains(path, "{model}") && isBatchEndpoint(strings.Split(path[1:], "/")) {
		return Endpoint{}, fmt.Errorf("endpoint path %q: a message batch takes the models of its requests, not {model}", path)
	}
	return classified(extending(Endpoint{Method: method, Path: path})), nil
}

// extending gives an operator's endpoint the checks of the capability it extends, found by a
// segment of its path, wherever it stands (/v1/responses/compact, /openai/v1/responses): a path
// with a responses segment is checked for the references of a Responses body (input items,
// conversation, prompt …) and the models of its tools (an image_generation tool's images are
// held and charged), and the items of its answer are recorded; otherwise the first messages
// segment (count_tokens) gets those of Messages (a messages segment followed by a batches one,
// a Message Batches create, those of Messages in each of its requests), chat those of Chat
// Completions, models
// (countTokens) those of generateContent, whose body's models (generateContentRequest.model, each
// batch request's model) must name the path's {model}. Any other endpoint is checked for the references that
// every body is checked for (file_id, file_ids, vector_store_ids) and its media URL members, as
// speech and embeddings are. Every one is checked for previous_response_id, whatever it extends,
// and one with an images, video or videos segment for every URL in it, as the media generation
// endpoints are (checkFetchedURLs); a chat one, and any other, for every URL outside free text,
// as chat, embeddings and rerank are.
func extending(ep Endpoint) Endpoint {
	ep.Refs = map[string]string{"previous_response_id": KindResponse}
	ep.nested = mediaRefs
	segs := strings.Split(strings.TrimPrefix(ep.Path, "/"), "/")
	ep.fetchesURLs = slices.ContainsFunc(segs, func(seg string) bool {
		return seg == "images" || seg == "video" || seg == "videos"
	})
	if slices.Contains(segs, "responses") {
		// A Responses body's image_generation tool runs a model of its own (checkToolModels).
		ep.nested, ep.RevealsItems, ep.toolModels = responsesRefs, true, true
		return ep
	}
	for _, seg := range segs {
		switch seg {
		case "messages":
			ep.nested = messagesRefs
			if isBatchEndpoint(segs) {
				ep.nested, ep.batch = messageBatchRefs, true
			}
		case "chat":
			ep.nested = chatRefs
			ep.dialogue = !ep.fetchesURLs
			ep.fetchesURLs = true
		case "models":
			// A generate-content method of the operator's: the body's models
			// (generateContentRequest.model, each request's model) must be the path's, as on
			// the built-in methods (checkBodyModels).
			ep.nested, ep.modelInBody = geminiRefs, true
		default:
			continue
		}
		return ep
	}
	ep.dialogue = !ep.fetchesURLs
	ep.fetchesURLs = true
	return ep
}

// match reports whether the endpoint serves method and path, and returns its parameters. It
// runs for every endpoint before the one that serves a request, so a path without parameters
// is compared as one string, one with parameters walked segment by segment without splitting
// the two paths, and the parameter map is made only on a match. Before the walk, the path must
// begin with the pattern's text up to its first parameter, which every match does: the
// generate-content patterns that come first in Capabilities pass over a chat path at once.
func (e *Endpoint) match(method, path string) (params map[string]string, ok bool) {
	if method != e.Method {
		return nil, false
	}
	brace := strings.IndexByte(e.Path, '{')
	if brace < 0 {
		return nil, e.Path == path // segment by segment equal, as one string
	}
	if !strings.HasPrefix(path, e.Path[:brace]) || !matchSegments(e.Path, path, nil) {
		return nil, false
	}
	params = map[string]string{}
	matchSegments(e.Path, path, params)
	return params, true
}

// matchSegments reports whether path has the segments of pattern (split at "/", the same number
// of them), each equal to the pattern's or, for a pattern segment {name}suffix, a value that ends
// with suffix, is not empty without it and holds no ':'. Into a non-nil params it puts each
// parameter's value, a later one of the same name replacing an earlier one.
func matchSegments(pattern, path string, params map[string]string) bool {
	for {
		want, wantRest, wantMore := strings.Cut(pattern, "/")
		got, gotRest, gotMore := strings.Cut(path, "/")
		if wantMore != gotMore {
			return false // a different number of segments
		}
		if !strings.HasPrefix(want, "{") {
			if want != got {
				return false
			}
		} else {
			name, suffix, _ := strings.Cut(want[1:], "}")
			value, found := strings.CutSuffix(got, suffix)
			if !found || value == "" || strings.Contains(value, ":") {
				return false
			}
			if params != nil {
				params[name] = value
			}
		}
		if !wantMore {
			return true
		}
		pattern, path = wantRest, gotRest
	}
}

// endpoint finds the endpoint that serves a request: the capabilities first, then the operator's.
// A capability without a parameter (the usual request's) is found with one look-up.
func (rt *Router) endpoint(method, path string) (Endpoint, map[string]string, bool) {
	if i, ok := literalCapabilities[endpointKey{method, path}]; ok {
		return Capabilities[i], nil, true
	}
	for _, list := range [...][]Endpoint{Capabilities, rt.Extra} {
		if i, params, ok := firstMatch(list, method, path); ok {
			return list[i], params, true
		}
	}
	return Endpoint{}, nil, false
}

// firstMatch returns the index of the first endpoint of list that a request matches, and its
// parameters.
func firstMatch(list []Endpoint, method, path string) (int, map[string]string, bool) {
	for i := range list { // by index: an Endpoint is large, and most are passed over
		if params, ok := list[i].match(method, path); ok {
			return i, params, true
		}
	}
	return 0, nil, false
}

// endpointKey is a request's method and path.
type endpointKey struct{ method, path string }

// literalCapabilities are the indexes of the Capabilities without a parameter, by their method
// and path, each one that firstMatch finds for its own method and path (so that the look-up
// answers what the scan would). Capabilities are read once, here: they are not changed.
var literalCapabilities = indexLiterals(Capabilities)

func indexLiterals(list []Endpoint) map[endpointKey]int {
	index := make(map[endpointKey]int)
	for i, ep := range list {
		if strings.Contains(ep.Path, "{") {
			continue
		}
		if first, _, ok := firstMatch(list, ep.Method, ep.Path); ok && first == i {
			index[endpointKey{ep.Method, ep.Path}] = i
		}
	}
	return index
}
