package passthrough

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// MaxFetchedURLs bounds the URLs that one media generation body may hold; each is parsed and
// checked. Past it: 400.
const MaxFetchedURLs = 64

// mediaFreeText are the members of a media generation body that hold the caller's text, not an
// address: a prompt that is only a URL is a prompt. They are matched exactly: "Prompt" is not
// free text, since a provider may read it as anything.
var mediaFreeText = []string{"prompt", "negative_prompt", "text"}

// dialogueFreeText are the free text members of chat, embeddings, rerank and speech bodies: a
// message's content and text, the text to embed, rank or speak (input, query, documents), and
// the other members that carry the caller's words, never an address to fetch.
var dialogueFreeText = []string{"prompt", "negative_prompt", "text", "content", "input", "query", "documents",
	"instructions", "system", "arguments", "description", "refusal", "reasoning_content", "stop"}

// notFetched are the members, by their path from the body's top ("*" for any array element),
// whose strings no provider fetches, forwarded whatever they look like: what the caller attaches
// to identify or label a request (user, metadata, safety_identifier, prompt_cache_key), and in
// chat what describes the model's own output rather than the provider's input: the caller's
// tool and function definitions (names, descriptions, JSON schemas with their pattern, default,
// examples), the answer's response_format, tool_choice, logit_bias, stop sequences, the
// function and arguments of tool calls in the conversation, and message names. A tool that is
// not a function (an MCP server_url, say) is not among them: its URLs are checked.
var (
	mediaNotFetched    = [][]string{{"user"}}
	dialogueNotFetched = [][]string{{"user"}, {"metadata"}, {"safety_identifier"}, {"prompt_cache_key"},
		{"response_format"}, {"tools", "*", "function"}, {"functions"}, {"function_call"}, {"tool_choice"},
		{"logit_bias"}, {"stop"}, {"messages", "*", "tool_calls", "*", "function"},
		{"messages", "*", "function_call"}, {"messages", "*", "name"}}
)

// fetchRules are the free text members and the members no provider fetches of the endpoint's
// bodies, JSON or multipart: a dialogue endpoint's, or a media generation endpoint's.
func (ep Endpoint) fetchRules() (freeText []string, notFetched [][]string) {
	if ep.dialogue {
		return dialogueFreeText, dialogueNotFetched
	}
	return mediaFreeText, mediaNotFetched
}

// formFieldPath reads a multipart field name as the JSON path that form encoders write it for:
// "user" is the member user, "metadata[ref]" the member ref of metadata, "stop[0]" and "stop[]"
// an element of stop. A name that is not of the form key[seg]… is one member named so, whole.
func formFieldPath(name string) *jsonkeys.Path {
	key, rest, nested := strings.Cut(name, "[")
	whole := &jsonkeys.Path{Key: name, Index: -1}
	if !nested || key == "" || strings.ContainsAny(key, "]") {
		return whole
	}
	path := &jsonkeys.Path{Key: key, Index: -1}
	rest = "[" + rest
	for rest != "" {
		seg, after, ok := strings.Cut(rest[1:], "]")
		if rest[0] != '[' || !ok || strings.Contains(seg, "[") {
			return whole
		}
		if seg == "" || strings.Trim(seg, "0123456789") == "" {
			path = &jsonkeys.Path{Parent: path, Index: 0} // an element, as every index of a JSON array is
		} else {
			path = &jsonkeys.Path{Parent: path, Key: seg, Index: -1}
		}
		rest = after
	}
	return path
}

// checkFetchedURLs checks a body whose provider may fetch any string in it: media generation
// (images, videos), whose providers take reference media, masks, first frames and callbacks as
// URLs under names that differ from one provider to the next (image, images, first_frame_image,
// input_reference, callback_url …), and chat, embeddings, rerank and speech, where providers
// take image, fallback_url, input_audio.url and the like. Every string at any depth that looks
// like a URL (media.LooksLikeURL, host references without a scheme included), except in the
// members named in freeText and the members of notFetched, must pass media.CheckPassThroughURL. Inline data (data:) is
// accepted; an address of a host that is not public, a URL with credentials, a URL without a
// scheme, or another scheme is refused with 400 naming the member, since the provider (possibly
// a model server in the operator's own network) fetches what it is given.
//
// body must be valid JSON: the router passes only the bytes that jsonFields read and checked with
// jsonkeys.Members, so it is not validated again (see jsonkeys.StringsValid).
//
// It walks every string of body; checkBodyRefs calls it only for a body that plainStrings does
// not find plain.
func checkFetchedURLs(body []byte, freeText []string, notFetched [][]string) error {
	urls := 0
	err := jsonkeys.StringsValid(body, nil, func(path *jsonkeys.Path, raw []byte) error {
		// Most strings go by without being decoded: free text, and text without a colon or slash.
		// A short text (a model, a role) is read for one first, which costs less than looking
		// its member up among the free text; a long one (a message) is looked up first.
		text := raw[1 : len(raw)-1]
		short := len(text) <= shortText
		if short && !media.MayBeURL(text) || isFreeText(path, freeText) || !short && !media.MayBeURL(text) {
			return nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil || !media.LooksLikeURL(s) || under(path, notFetched) {
			return nil
		}
		param := path.String()
		if urls++; urls > MaxFetchedURLs {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", fmt.Sprintf("%s is one URL too many: a body may hold at most %d", param, MaxFetchedURLs)).WithParam(param)
		}
		if err := media.CheckPassThroughURL(s); err != nil {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", param+" looks like a URL the provider may fetch, so it "+err.Error()).WithParam(param)
		}
		return nil
	})
	if _, ok := errors.AsType[*apierror.Error](err); ok || err == nil {
		return err
	}
	if errors.Is(err, jsonkeys.ErrTooDeep) {
		return apierror.New(http.StatusBadRequest, "invalid_request_body", fmt.Sprintf("the body is nested more than %d levels deep", jsonkeys.MaxWalkDepth))
	}
	return errBadJSON
}

// shortText is the length up to which checkFetchedURLs reads a string for a colon or slash
// before it looks its member up among the free text.
const shortText = 32

// isFreeText reports whether a string at path is the value of a free text member named in names
// (an element of one included), spelled exactly so.
func isFreeText(path *jsonkeys.Path, names []string) bool {
	for path != nil && path.Index >= 0 {
		path = path.Parent
	}
	if path == nil {
		return false
	}
	return slices.Contains(names, path.Key)
}

// under reports whether path is at or under one of the paths of notFetched, spelled exactly so.
func under(path *jsonkeys.Path, paths [][]string) bool {
	var segs []string
	for p := path; p != nil; p = p.Parent {
		if p.Index >= 0 {
			segs = append(segs, "*")
		} else {
			segs = append(segs, p.Key)
		}
	}
	slices.Reverse(segs)
	for _, prefix := range paths {
		if len(prefix) <= len(segs) && slices.Equal(segs[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// mediaRefs are the references of the other JSON capabilities (speech, embeddings, rerank): the
// generic ones, and media URLs in image_url, video_url, audio_url and file_url members (a
// multimodal embedding's image), checked as a chat's are.
var mediaRefs = &bodyRefs{
	hintWords: []string{"url"},
	find: func(path *jsonkeys.Path, members []jsonkeys.Member, _ *foundRefs) error {
		return mediaURLs(path, members)
	},
}
