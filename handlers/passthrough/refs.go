package passthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Kinds of upstream objects that a body may name. Response items are recorded as the account's
// that an answer revealed them to (see items.go). The others pass-through never creates: the
// endpoints that make them (Conversations, Files, Vector stores, Containers, Prompts) are not
// forwarded, so no account owns one and every reference to one is refused. They are kinds, not a
// deny list: an id recorded as the caller's object of the kind would pass.
const (
	KindConversation    = "conversation"
	KindResponseItem    = "response_item"
	KindPrompt          = "prompt"
	KindFile            = "file"
	KindVectorStore     = "vector_store"
	KindContainer       = "container"
	KindChatAudio       = "chat_audio"
	KindCachedContent   = "cached_content"
	KindFileSearchStore = "file_search_store"
	KindSkill           = "skill"
)

// MaxBodyRefs bounds the references to upstream objects that one body may hold; each is a read
// of the store. Past it: 400.
const MaxBodyRefs = 64

// bodyRefs finds the references to upstream objects nested in a JSON body of one endpoint.
type bodyRefs struct {
	// hintWords are the names, besides the generic ones, of the members that hold references
	// (lower-case ASCII, see keyHint): a body that keyHint finds none of (mayHold) is not walked.
	hintWords []string
	// find is called for every object in the body (see jsonkeys.Walk) and adds what it names.
	find func(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error
}

// mayHold reports cheaply whether body can hold a reference at all (keyHint with hintWords); a
// body it rejects is not walked. It never rejects a body that holds one.
func (b *bodyRefs) mayHold(body []byte) bool { return keyHint(body, b.hintWords...) }

// ref is one reference: the param it sits at, the kind of object it names, and its id.
type ref struct {
	param, kind, id string
}

type foundRefs struct {
	refs []ref
	// items are the references to response items (KindResponseItem), the first of each id,
	// checked together.
	items []ref
	// itemIDs are the distinct ids of items, at most MaxBodyItems.
	itemIDs map[string]struct{}
}

// add records a reference held by a string value at param; null and other types name nothing.
func (f *foundRefs) add(param *jsonkeys.Path, kind string, raw json.RawMessage) error {
	if len(raw) == 0 || raw[0] != '"' {
		return nil
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return err
	}
	if kind == KindResponseItem {
		// An id named again is checked at its first place: the first refused reference in the
		// body is the first place of its id.
		if _, seen := f.itemIDs[id]; seen {
			return nil
		}
		if len(f.itemIDs) == MaxBodyItems {
			return errTooManyItems
		}
		if f.itemIDs == nil {
			f.itemIDs = make(map[string]struct{})
		}
		f.itemIDs[id] = struct{}{}
		f.items = append(f.items, ref{param: param.String(), kind: kind, id: id})
		return nil
	}
	if len(f.refs) == MaxBodyRefs {
		return errTooManyRefs
	}
	f.refs = append(f.refs, ref{param: param.String(), kind: kind, id: id})
	return nil
}

// addAll records the references of an array of string ids at param.
func (f *foundRefs) addAll(param *jsonkeys.Path, kind string, raw json.RawMessage) error {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return err
	}
	for i, item := range items {
		if err := f.add(&jsonkeys.Path{Parent: param, Index: i}, kind, item); err != nil {
			return err
		}
	}
	return nil
}

// member is the path of an object's member.
func member(path *jsonkeys.Path, key string) *jsonkeys.Path {
	return &jsonkeys.Path{Parent: path, Key: key, Index: -1}
}

var errTooManyRefs = apierror.New(http.StatusBadRequest, "invalid_request_body",
	fmt.Sprintf("the body names more than %d upstream objects (files, vector stores, items, …)", MaxBodyRefs))

// checkBodyRefs walks a JSON body of an endpoint with nested references and refuses it unless
// every object it names is the caller's account's. Each key that differs from a reference field
// only by case is read as that field too, so whichever spelling an upstream honours was checked;
// a repeated key anywhere is refused.
func (rt *Router) checkBodyRefs(ctx context.Context, id auth.Identity, ep Endpoint, body []byte) error {
	if ep.fetchesURLs {
		var words []string
		if ep.nested != nil {
			words = ep.nested.hintWords
		}
		// One pass answers both checks for most bodies (see plainStrings); the others are
		// walked for URLs, and looked at again for references.
		plain, hint := plainStrings(body, words)
		if !plain {
			freeText, notFetched := ep.fetchRules()
			if err := checkFetchedURLs(body, freeText, notFetched); err != nil {
				return err
			}
		}
		if ep.nested == nil || plain && !hint || !plain && !ep.nested.mayHold(body) {
			return nil
		}
	} else if ep.nested == nil || !ep.nested.mayHold(body) {
		return nil
	}
	var found foundRefs
	if err := walkError(walkRefs(body, ep.nested, &found)); err != nil {
		return err
	}
	if err := rt.checkItems(ctx, id, found.items); err != nil {
		return err
	}
	checked := make(map[ref]bool, len(found.refs))
	for _, f := range found.refs {
		if checked[ref{kind: f.kind, id: f.id}] {
			continue
		}
		checked[ref{kind: f.kind, id: f.id}] = true
		if _, err := rt.owned(ctx, id, f.kind, f.id); errors.Is(err, errNoObject) {
			return errRefused(f.param, f.kind)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// walkError is the refusal of a body whose walk failed: a refused key, a body nested too deeply,
// or a refusal of the visitor as it is.
func walkError(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		return apierror.New(http.StatusBadRequest, "invalid_request_body", e.Field+" is refused: "+e.Error()).WithParam(e.Field)
	}
	if errors.Is(err, jsonkeys.ErrTooDeep) {
		return apierror.New(http.StatusBadRequest, "invalid_request_body", fmt.Sprintf("the body is nested more than %d levels deep", jsonkeys.MaxWalkDepth))
	}
	if _, ok := errors.AsType[*apierror.Error](err); ok {
		return err
	}
	return errBadJSON
}

// walkRefs adds to found every reference in body, which must be valid JSON: the router passes
// only the bytes that jsonFields read and checked with jsonkeys.Members, so it is not validated
// again (see jsonkeys.WalkValid).
func walkRefs(body []byte, refs *bodyRefs, found *foundRefs) error {
	return jsonkeys.WalkValid(body, func(path *jsonkeys.Path, members []jsonkeys.Member) error {
		if err := genericRefs(path, members, found); err != nil {
			return err
		}
		return refs.find(path, members, found)
	})
}

// genericRefs finds the references that mean the same wherever they sit, in every endpoint's
// body: file_id (content parts of chat, responses and messages), file_ids (code interpreter
// containers) and vector_store_ids (file search tools).
//
// A citation annotation of output text (file_citation, container_file_citation, file_path, under
// annotations[]) names a file it cites, not one the model reads: clients replay a response's
// output as the next input with them (code interpreter files, which the gateway does not record),
// so they are not references.
func genericRefs(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
	if citation(path, members) {
		return nil
	}
	for _, m := range members {
		var err error
		switch {
		case strings.EqualFold(m.Key, "file_id"):
			err = found.add(member(path, m.Key), KindFile, m.Value)
		case strings.EqualFold(m.Key, "file_ids"):
			err = found.addAll(member(path, m.Key), KindFile, m.Value)
		case strings.EqualFold(m.Key, "vector_store_ids"):
			err = found.addAll(member(path, m.Key), KindVectorStore, m.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// citation reports whether an object is a file citation annotation: an element of an array
// whose key is exactly "annotations", with a type, spelled exactly so, that names a citation.
func citation(path *jsonkeys.Path, members []jsonkeys.Member) bool {
	if path == nil || path.Index < 0 || path.Parent == nil || path.Parent.Index >= 0 || path.Parent.Key != "annotations" {
		return false
	}
	typ, err := exactType(path, members)
	if err != nil {
		return false // checked as anything else; the visitor refuses the repeated type
	}
	switch typ {
	case "file_citation", "container_file_citation", "file_path":
		return true
	}
	return false
}

// only returns the string value of the one member whose key folds to name: empty when there is
// none, or it is null or not a string. More than one is refused: a decoder that folds case would
// pick one of them, and which one is unclear.
func only(path *jsonkeys.Path, members []jsonkeys.Member, name string) (string, error) {
	var value json.RawMessage
	n := 0
	for _, m := range members {
		if strings.EqualFold(m.Key, name) {
			n++
			value = m.Value
		}
	}
	if n > 1 {
		field := member(path, name).String()
		return "", apierror.New(http.StatusBadRequest, "invalid_request_body",
			field+" is refused: it is sent more than once, in different letter cases").WithParam(field)
	}
	var s string
	if n == 0 || json.Unmarshal(value, &s) != nil {
		return "", nil
	}
	return s, nil
}

// exactType returns an object's type (see only), but "" unless the key is spelled exactly "type":
// an upstream that matches keys exactly does not see a "Type", so an object whose type the
// gateway would trust only in another spelling is checked as if it had none.
func exactType(path *jsonkeys.Path, members []jsonkeys.Member) (string, error) {
	typ, err := only(path, members, "type")
	if err != nil || typ == "" {
		return "", err
	}
	for _, m := range members {
		if m.Key == "type" {
			return typ, nil
		}
	}
	return "", nil
}

// refsOf adds every member of an object whose key folds to name as a reference of kind.
func refsOf(path *jsonkeys.Path, members []jsonkeys.Member, name, kind string, found *foundRefs) error {
	for _, m := range members {
		if strings.EqualFold(m.Key, name) {
			if err := found.add(member(path, m.Key), kind, m.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// responsesRefs are the references of POST /v1/responses: conversation (an id, or an object with
// one), prompt.id, the id of every input item that has one, whatever its type (see
// inputItemRefs, inputItem), the container of a code_interpreter tool, and the generic ones.
var responsesRefs = &bodyRefs{
	hintWords: []string{"id", "approval_request_id", "url", "conversation", "prompt", "container"},
	find: func(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
		if err := mediaURLs(path, members); err != nil {
			return err
		}
		switch {
		case path == nil:
			if err := refsOf(nil, members, "conversation", KindConversation, found); err != nil {
				return err
			}
			return refsOf(nil, members, "prompt", KindPrompt, found)
		case foldedTop(path, "conversation"):
			return refsOf(path, members, "id", KindConversation, found)
		case foldedTop(path, "prompt"):
			return refsOf(path, members, "id", KindPrompt, found)
		case inputItem(path):
			return inputItemRefs(path, members, found)
		case path.Index >= 0 && foldedTop(path.Parent, "tools"):
			return refsOf(path, members, "container", KindContainer, found)
		}
		return nil
	},
}

// inputItem reports whether path is an input item of a Responses body: an element of the
// top-level input array, and also an element of an array nested in it or an input that is one
// object, which a lenient upstream may read as items (flattened, or as a list of one).
func inputItem(path *jsonkeys.Path) bool {
	for path != nil && path.Index >= 0 {
		path = path.Parent
	}
	return foldedTop(path, "input")
}

// fileRefs are the references every other JSON capability body is checked for: the generic ones
// (file_id, file_ids, vector_store_ids), wherever they sit.
var fileRefs = &bodyRefs{
	find: func(*jsonkeys.Path, []jsonkeys.Member, *foundRefs) error { return nil },
}

// foldedTop reports whether path is a top-level member whose key folds to name.
func foldedTop(path *jsonkeys.Path, name string) bool {
	return path != nil && path.Parent == nil && path.Index < 0 && strings.EqualFold(path.Key, name)
}

// chatRefs are the references of POST /v1/chat/completions: file_id in file content parts, and
// the id of an earlier audio answer in an assistant message (messages[].audio.id).
var chatRefs = &bodyRefs{
	hintWords: []string{"audio", "url"},
	find: func(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
		if err := mediaURLs(path, members); err != nil {
			return err
		}
		if path != nil && path.Index < 0 && strings.EqualFold(path.Key, "audio") &&
			path.Parent != nil && path.Parent.Index >= 0 && foldedTop(path.Parent.Parent, "messages") {
			return refsOf(path, members, "id", KindChatAudio, found)
		}
		return nil
	},
}

// messagesRefs are the references of POST /v1/messages: file_id in document and image sources,
// the container (an id, or an object with one), and the custom skills of a container
// (container.skills[] of type custom; Anthropic's own skills pass).
var messagesRefs = messagesRefsAt(func(path *jsonkeys.Path) bool { return path == nil })

// messageBatchRefs are the references of a Message Batches create (see batches.go): those of
// POST /v1/messages in the params of each request, and at the top too.
var messageBatchRefs = messagesRefsAt(func(path *jsonkeys.Path) bool { return path == nil || batchParamsPath(path) })

// messagesRefsAt are the references of Messages bodies that sit wherever root says.
func messagesRefsAt(root func(path *jsonkeys.Path) bool) *bodyRefs {
	// container is the container member of a Messages body.
	container := func(path *jsonkeys.Path) bool {
		return path != nil && path.Index < 0 && strings.EqualFold(path.Key, "container") && root(path.Parent)
	}
	return &bodyRefs{
		hintWords: []string{"container", "url"},
		find: func(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
			if err := mediaURLs(path, members); err != nil {
				return err
			}
			switch {
			case root(path):
				return refsOf(path, members, "container", KindContainer, found)
			case container(path):
				return refsOf(path, members, "id", KindContainer, found)
			case path.Index >= 0 && path.Parent != nil && path.Parent.Index < 0 && strings.EqualFold(path.Parent.Key, "skills") && container(path.Parent.Parent):
				typ, err := exactType(path, members)
				if err != nil || typ == "anthropic" {
					return err
				}
				return refsOf(path, members, "skill_id", KindSkill, found)
			}
			return nil
		},
	}
}

// geminiRefs are the references of generateContent: cachedContent (cached_content; also in the
// generateContentRequest of a countTokens body), a fileData
// fileUri (file_uri) that is not a public http(s) URL (a Files API file, a gs:// object of the
// operator's project), and file search stores (fileSearchStoreNames).
var geminiRefs = &bodyRefs{
	hintWords: []string{"cachedcontent", "cached_content", "fileuri", "file_uri", "filesearchstorenames", "file_search_store_names"},
	find: func(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
		if path == nil || foldedTop(path, "generateContentRequest") || foldedTop(path, "generate_content_request") {
			for _, name := range []string{"cachedContent", "cached_content"} {
				if err := refsOf(path, members, name, KindCachedContent, found); err != nil {
					return err
				}
			}
		}
		for _, m := range members {
			var err error
			switch {
			case strings.EqualFold(m.Key, "fileUri") || strings.EqualFold(m.Key, "file_uri"):
				var uri string
				if json.Unmarshal(m.Value, &uri) == nil && !publicFileURI(uri) {
					err = found.add(member(path, m.Key), KindFile, m.Value)
				}
			case strings.EqualFold(m.Key, "fileSearchStoreNames") || strings.EqualFold(m.Key, "file_search_store_names"):
				err = found.addAll(member(path, m.Key), KindFileSearchStore, m.Value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	},
}

// publicFileURI reports whether a generateContent fileUri is a public media URL that the
// provider fetches, rather than a name of an object of the operator's project: http(s), a public
// host, and not a Google API or storage host (where files and storage objects of the project live).
func publicFileURI(uri string) bool {
	if media.CheckMediaURL(uri) != nil {
		return false
	}
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	// storage.cloud.google.com serves a project's storage objects to whoever holds its
	// credentials (the authenticated form of storage.googleapis.com).
	return host != "googleapis.com" && !strings.HasSuffix(host, ".googleapis.com") && host != "storage.cloud.google.com"
}

// escapedRune is the start of a \u escape, the only escape that can spell a letter or _ in a key
// (a key with \\u in it holds it too, which only costs a walk).
var escapedRune = []byte(`\u`)

// longS is ſ, which folds to s: a key spelled with it may read as one with s.
var longS = []byte("\u017f")

// keyHint reports cheaply whether body may hold a key whose name folds to one of words, or to one
// of the generic reference and media names (file_id, file_ids, vector_store_ids, image_url…):
// some key is spelled with a \u escape or with ſ, file_id, store_id or _url appears in any case,
// or one of words appears in quotes in any case. It never
// misses such a key; it may find one that is not there, which only costs a walk. words are
// lower-case ASCII without k (whose Kelvin sign fold it does not look for) and without a quote.
func keyHint(body []byte, words ...string) bool {
	if bytes.Contains(body, escapedRune) || bytes.Contains(body, longS) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '_')
		if j < 0 {
			break
		}
		if underscoreHint(body, i+j) {
			return true
		}
		i += j + 1
	}
	// A word in quotes lies between two quotes that follow each other, since it holds none.
	lengths := wordLengths(words)
	for open, i := -1, 0; ; {
		j := bytes.IndexByte(body[i:], '"')
		if j < 0 {
			return false
		}
		closing := i + j
		if open >= 0 && quotedWord(body, open, closing, lengths, words) {
			return true
		}
		open, i = closing, closing+1
	}
}

// underscoreHint reports whether the '_' at under in body begins _url, or _id after file or
// store, in any case.
func underscoreHint(body []byte, under int) bool {
	return foldAt(body, under+1, "id") && (foldAt(body, under-4, "file") || foldAt(body, under-5, "store")) ||
		foldAt(body, under+1, "url")
}

// wordLengths has a bit for the length of each of words (the last bit for all of 63 bytes and
// more), so that the text between two quotes is compared with the words only when one has its
// length.
func wordLengths(words []string) (lengths uint64) {
	for _, w := range words {
		lengths |= 1 << min(len(w), 63)
	}
	return lengths
}

// quotedWord reports whether the text between the quotes at open and closing is one of words,
// in any case; lengths is wordLengths(words).
func quotedWord(body []byte, open, closing int, lengths uint64, words []string) bool {
	return lengths&(1<<min(closing-open-1, 63)) != 0 && isWord(body[open+1:closing], words)
}

// isWord reports whether b is one of words, in any case.
func isWord(b []byte, words []string) bool {
	for _, w := range words {
		if len(w) == len(b) && equalFoldASCII(b, w) {
			return true
		}
	}
	return false
}

// foldAt reports whether body holds the lower-case ASCII word w at offset at, in any case.
func foldAt(body []byte, at int, w string) bool {
	return at >= 0 && at+len(w) <= len(body) && equalFoldASCII(body[at:at+len(w)], w)
}

// equalFoldASCII reports whether b equals the lower-case ASCII word w in any letter case.
func equalFoldASCII(b []byte, w string) bool {
	for i := range len(w) {
		if lower(b[i]) != w[i] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
