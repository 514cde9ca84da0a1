package videotask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// CreateRequest is what mediagw needs of a create request after validation. The request body
// itself is forwarded as the client sent it, so fields mediagw does not know reach the upstream
// unchanged, once the URLs in them passed media.Unread (unread.go); only callback_url is taken
// out (mediagw delivers callbacks itself).
type CreateRequest struct {
	Model       string
	CallbackURL string
	// Forward is the body to send upstream.
	Forward []byte
	// DraftTasks are the draft_task.id references of content, which must name tasks of the
	// caller's account.
	DraftTasks []DraftTaskRef
	// ReturnLastFrame is return_last_frame: without it the answer has no last_frame_url.
	ReturnLastFrame bool
	// Billing is what the task's price depends on (duration or frames, resolution, ratio,
	// generate_audio, draft, reference videos), for its estimate.
	Billing billing.VideoTask
}

// DraftTaskRef is one content item of type draft_task.
type DraftTaskRef struct {
	// Param names the field, e.g. content[1].draft_task.id.
	Param string
	ID    string
}

// Checked fields of the create body (spec §2.2), of a content item (§2.3) and of their objects.
// Their keys follow jsonkeys' rule: no repeats, no case variants.
var (
	createFields  = []string{"model", "content", "callback_url", "return_last_frame", "service_tier", "execution_expires_after", "generate_audio", "draft", "resolution", "ratio", "duration", "frames", "seed", "camera_fixed", "watermark", "safety_identifier", "priority", "tools", methodField}
	contentFields = []string{"type", "text", "image_url", "video_url", "audio_url", "draft_task", "role"}
	mediaFields   = []string{"url"}
	draftFields   = []string{"id"}
)

// methodField is the body member in which web frameworks that honour ?_method= (Laravel and
// Symfony read it from a JSON body too) take a POST for another method. The create is forwarded
// with its unknown members, so one that has it, in any letter case (a checked field's case
// variant is refused by jsonkeys' rule), is refused, as pass-through refuses it: an upstream
// behind such a framework would take the create for a GET, a PUT or a DELETE.
const methodField = "_method"

// errMethodOverride answers a create body with a _method member.
var errMethodOverride = apierror.New(400, "invalid_request", "_method: a request may not override its method: send the method itself").WithParam(methodField)

// members applies jsonkeys' rule to the object raw at param, a value of the valid create body,
// and returns its checked fields. A broken rule is 400 invalid_request naming the field.
func members(raw []byte, param string, fields ...string) (map[string]json.RawMessage, error) {
	m, err := jsonkeys.MembersValid(raw, fields...)
	return m, keyError(err, param)
}

// keyError makes a broken jsonkeys rule in the object at param (the body when param is "") a 400
// invalid_request naming the field; other errors are returned as they are.
func keyError(err error, param string) error {
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		field := e.Field
		if param != "" {
			field = param + "." + field
		}
		msg := e.Error()
		if field != "" {
			msg = field + ": " + msg
		}
		return apierror.New(400, "invalid_request", msg).WithParam(field)
	}
	return err
}

// Validation failures.
func invalid(field, format string, a ...any) *apierror.Error {
	return apierror.New(400, "invalid_request", field+" "+fmt.Sprintf(format, a...)).WithParam(field)
}

var (
	errMissingModel = apierror.New(400, "missing_model", "model is required").WithParam("model")
	enumResolution  = []string{"480p", "720p", "1080p", "4k"}
	enumRatio       = []string{"16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"}
	enumServiceTier = []string{"default", "flex"}
	firstLastRoles  = []string{"first_frame", "last_frame"}
	referenceRoles  = []string{"reference_image", "reference_video", "reference_audio"}
)

// ParseCreate validates a create request body against spec §2.2 and §2.3. JSON null counts as an
// absent field. A failure is an *apierror.Error naming the field.
func ParseCreate(body []byte) (CreateRequest, error) {
	// Every member, checked or not, from one reading of the body: the rule of jsonkeys holds
	// for all keys, so this is the map encoding/json would decode.
	fields, err := jsonkeys.All(body, createFields...)
	if errors.Is(err, jsonkeys.ErrNotObject) {
		return CreateRequest{}, apierror.NotJSONObject("invalid_request")
	} else if err != nil {
		return CreateRequest{}, keyError(err, "") // a key that is not UTF-8 is named here
	}
	if !utf8.Valid(body) {
		return CreateRequest{}, apierror.NotUTF8("invalid_request")
	}
	if _, ok := fields[methodField]; ok {
		return CreateRequest{}, errMethodOverride
	}
	for k, v := range fields {
		if isNull(v) {
			delete(fields, k)
		}
	}
	var req CreateRequest
	if raw, ok := fields["model"]; !ok {
		return req, errMissingModel
	} else if req.Model, ok = jsonString(raw); !ok {
		return req, invalid("model", "must be a string")
	} else if req.Model == "" {
		return req, errMissingModel
	}
	var unread media.Unread
	drafts, joined, err := checkContent(&unread, fields["content"], &req.Billing.ReferenceVideos)
	if err != nil {
		return req, err
	}
	req.DraftTasks = drafts
	rewritten, err := checkOptions(fields)
	if err != nil {
		return req, err
	}
	req.ReturnLastFrame = string(fields["return_last_frame"]) == "true" // checked to be a boolean
	pricedOptions(&req.Billing, fields)
	if joined != nil {
		fields["content"] = joined
		rewritten = true
	}
	if err := checkUnreadFields(&unread, body, fields); err != nil {
		return req, err
	}
	if raw, ok := fields["callback_url"]; ok {
		if req.CallbackURL, ok = jsonString(raw); !ok {
			return req, invalid("callback_url", "must be a string")
		}
		if len(req.CallbackURL) > MaxCallbackURLBytes {
			return req, invalid("callback_url", "must be at most %d bytes", MaxCallbackURLBytes)
		}
		if err := media.CheckURL(req.CallbackURL); err != nil {
			return req, invalid("callback_url", "%v", err)
		}
		delete(fields, "callback_url")
		rewritten = true
	}
	if !rewritten {
		req.Forward = body
		return req, nil
	}
	forward, err := json.Marshal(fields)
	if err != nil {
		return req, err
	}
	req.Forward = forward
	return req, nil
}

// MaxCallbackURLBytes bounds callback_url: the URL is kept with the task and sent on every
// delivery attempt, so a longer one is refused at create (2048 bytes, a common URL limit).
const MaxCallbackURLBytes = 2048

// MaxContentItems bounds the content items of a create request. A real request holds a prompt
// and a few references; the bound keeps one body from costing thousands of checks.
const MaxContentItems = 64

// itemParams are the params of the content items, content[0] to content[63], named once rather
// than for every item of every create.
var itemParams = func() (p [MaxContentItems]string) {
	for i := range p {
		p[i] = "content[" + strconv.Itoa(i) + "]"
	}
	return p
}()

// contentItem is one element of content; media objects are decoded by type.
type contentItem map[string]json.RawMessage

// checkContent checks the content items, and with u what they forward unread (see unread.go).
// When there are several text items, joined is the content to forward instead: the texts in
// order, joined with a newline, in one text item at the place of the first (spec §2.3), so that
// every upstream reads the prompt the contract describes.
func checkContent(u *media.Unread, raw json.RawMessage, videos *int) (drafts []DraftTaskRef, joined json.RawMessage, err error) {
	if raw == nil {
		return nil, nil, invalid("content", "is required: give at least one text item")
	}
	items, ok := jsonkeys.ElementsValid(raw)
	if !ok {
		return nil, nil, invalid("content", "must be an array")
	}
	if len(items) == 0 {
		return nil, nil, invalid("content", "must have at least one item")
	}
	if len(items) > MaxContentItems {
		return nil, nil, invalid("content", "has %d items; at most %d are accepted", len(items), MaxContentItems)
	}
	drafts, texts, err := checkItems(u, items, videos)
	if err != nil || len(texts) < 2 {
		return drafts, nil, err
	}
	joined, err = joinTexts(items, texts)
	return drafts, joined, err
}

// textItem is a text item of content: its place, its decoded members and its text, as the bytes
// between its quotes when they decode to themselves (plain; no copy made for the usual single
// prompt, which is forwarded as it came), else decoded.
type textItem struct {
	at    int
	item  contentItem
	plain []byte
	text  string
}

// value is the item's text.
func (t textItem) value() string {
	if t.plain != nil {
		return string(t.plain)
	}
	return t.text
}

// joinTexts makes the text items of content (items, its texts in order) one: the first, its text
// the texts joined with a newline.
func joinTexts(items []json.RawMessage, texts []textItem) (json.RawMessage, error) {
	all := make([]string, len(texts))
	for i, t := range texts {
		all[i] = t.value()
	}
	text, err := json.Marshal(strings.Join(all, "\n"))
	if err != nil {
		return nil, err
	}
	first := texts[0].item
	first["text"] = text
	firstItem, err := json.Marshal(first)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(items)-len(texts)+1)
	next := 0 // the next text item to leave out
	for i, item := range items {
		switch {
		case i == texts[0].at:
			out = append(out, firstItem)
			next++
		case next < len(texts) && i == texts[next].at:
			next++
		default:
			out = append(out, item)
		}
	}
	return json.Marshal(out)
}

// checkItems checks each content item and the rules across them; it returns the draft tasks
// referenced and the text items, and counts the video_url items in videos.
func checkItems(u *media.Unread, items []json.RawMessage, videos *int) ([]DraftTaskRef, []textItem, error) {
	var drafts []DraftTaskRef
	var texts []textItem
	var hasText, hasAudio, hasVisual, hasFirstLast, hasReference bool
	for i, rawItem := range items {
		field := itemParams[i] // checkContent bounds the items by MaxContentItems
		item, err := members(rawItem, field, contentFields...)
		if e, ok := errors.AsType[*apierror.Error](err); ok {
			return nil, nil, e
		}
		if err != nil {
			return nil, nil, invalid(field, "must be an object")
		}
		typ, ok := jsonEnum(item["type"], contentTypes)
		if !ok || typ == "" {
			return nil, nil, invalid(field+".type", "is required (text, image_url, video_url, audio_url or draft_task)")
		}
		if err := otherTypesData(item, typ, field); err != nil {
			return nil, nil, err
		}
		switch typ {
		case "text":
			text := textItem{at: i, item: item}
			var ok bool
			if text.plain, ok = plainString(item["text"]); !ok {
				if text.text, ok = jsonString(item["text"]); !ok {
					return nil, nil, invalid(field+".text", "must be a string")
				}
			}
			if strings.TrimSpace(text.text) == "" && len(bytes.TrimSpace(text.plain)) == 0 {
				return nil, nil, invalid(field+".text", "must not be empty")
			}
			hasText = true
			texts = append(texts, text)
		case "image_url", "video_url", "audio_url":
			if err := checkMediaItem(item, typ, field); err != nil {
				return nil, nil, err
			}
			hasAudio = hasAudio || typ == "audio_url"
			hasVisual = hasVisual || typ != "audio_url"
			if typ == "video_url" {
				*videos++
			}
		case "draft_task":
			if len(drafts) > 0 {
				// One draft is what a request continues (spec §2.3: draft_task.id, one id).
				return nil, nil, invalid(field, "is a second draft_task item: a request continues at most one draft task")
			}
			draft, err := members(item["draft_task"], field+".draft_task", draftFields...)
			if e, ok := errors.AsType[*apierror.Error](err); ok {
				return nil, nil, e
			}
			id, ok := jsonString(draft["id"])
			if err != nil || !ok || id == "" {
				return nil, nil, invalid(field+".draft_task.id", "must be a non-empty string")
			}
			drafts = append(drafts, DraftTaskRef{Param: field + ".draft_task.id", ID: id})
		default:
			return nil, nil, apierror.New(400, "unsupported_content_type",
				fmt.Sprintf("%s.type %q is not supported (text, image_url, video_url, audio_url, draft_task)", field, typ)).WithParam(field + ".type")
		}
		role, err := itemRole(item, typ, field)
		if err != nil {
			return nil, nil, err
		}
		if err := checkUnreadItem(u, rawItem, item, typ, field); err != nil {
			return nil, nil, err
		}
		hasFirstLast = hasFirstLast || slices.Contains(firstLastRoles, role)
		hasReference = hasReference || slices.Contains(referenceRoles, role)
	}
	switch {
	case !hasText:
		return nil, nil, invalid("content", "must contain a text item with the prompt")
	case hasAudio && !hasVisual:
		return nil, nil, invalid("content", "has audio_url but no image_url or video_url: audio cannot be used alone")
	case hasFirstLast && hasReference:
		return nil, nil, invalid("content", "mixes first/last-frame roles with reference roles: the two modes are exclusive")
	}
	return drafts, texts, nil
}

// dataFields are the content item fields that carry a type's data.
var dataFields = []string{"text", "image_url", "video_url", "audio_url", "draft_task"}

// contentTypes are the known types of a content item: those of its data fields.
var contentTypes = dataFields

// otherTypesData refuses an item that carries the data field of another type (a text item with a
// draft_task or an image_url): only the item's own data is checked, so another type's data would
// reach the upstream unchecked. An empty value (null, "", {}) carries nothing and passes, for
// clients that send every field.
func otherTypesData(item contentItem, typ, field string) error {
	if !slices.Contains(dataFields, typ) {
		return nil // an unknown type is refused after
	}
	for _, name := range dataFields {
		if raw, ok := item[name]; ok && name != typ && !emptyValue(raw) {
			return invalid(field+"."+name, "does not belong to an item of type %s", typ)
		}
	}
	return nil
}

// emptyValue reports whether raw is null, "" or an object without members.
func emptyValue(raw json.RawMessage) bool {
	switch v := bytes.TrimSpace(raw); {
	case isNull(v), string(v) == `""`:
		return true
	case len(v) > 0 && v[0] == '{':
		var m map[string]json.RawMessage
		return json.Unmarshal(v, &m) == nil && len(m) == 0
	}
	return false
}

// checkMediaItem checks the media object of an item of type typ (image_url, video_url or
// audio_url) at field; the params of its errors are named only when there is one.
func checkMediaItem(item contentItem, typ, field string) error {
	obj, err := jsonkeys.MembersValid(item[typ], mediaFields...)
	if _, ok := errors.AsType[*jsonkeys.Error](err); ok {
		return keyError(err, field+"."+typ)
	}
	url, ok := jsonString(obj["url"])
	if err != nil || obj["url"] == nil || !ok {
		return invalid(field+"."+typ+".url", "is required")
	}
	if err := media.CheckMediaURL(url); err != nil {
		return invalid(field+"."+typ+".url", "%v", err)
	}
	return nil
}

// itemRole returns the item's role and checks that a known role fits the item's type. A role
// that is a known one in another letter case or with spaces around it is refused: the modes are
// told apart by the exact roles, and a provider reading roles loosely would mix them.
func itemRole(item contentItem, typ, field string) (string, error) {
	raw, ok := item["role"]
	if !ok || isNull(raw) {
		return "", nil
	}
	role, ok := jsonEnum(raw, knownRoles)
	if !ok {
		return "", invalid(field+".role", "must be a string")
	}
	want, known := roleTypes[role]
	if loose := strings.ToLower(strings.TrimSpace(role)); !known && roleTypes[loose] != "" {
		return "", invalid(field+".role", "%q must be written exactly %q", role, loose)
	}
	if known && want != typ {
		return "", invalid(field+".role", "%q needs an item of type %s", role, want)
	}
	return role, nil
}

// knownRoles are the keys of roleTypes.
var knownRoles = slices.Sorted(maps.Keys(roleTypes))

// roleTypes are the item types that the known roles need.
var roleTypes = map[string]string{
	"first_frame": "image_url", "last_frame": "image_url", "reference_image": "image_url",
	"reference_video": "video_url", "reference_audio": "audio_url",
}

// enumOptions are the optional fields whose value is one of a list.
var enumOptions = []struct {
	name    string
	allowed []string
}{
	{"service_tier", enumServiceTier}, {"resolution", enumResolution}, {"ratio", enumRatio},
}

// checkOptions checks the optional fields of §2.2. An integer written with a fraction or an
// exponent (5.0, 1e1) is accepted and replaced in f by its plain form, so that the upstream gets
// the integer that was checked; rewritten reports such a replacement.
func checkOptions(f map[string]json.RawMessage) (rewritten bool, err error) {
	for _, name := range []string{"return_last_frame", "generate_audio", "draft", "camera_fixed", "watermark"} {
		if raw, ok := f[name]; ok && !jsonBool(raw) {
			return false, invalid(name, "must be true or false")
		}
	}
	for _, e := range enumOptions {
		if raw, ok := f[e.name]; ok {
			if s, ok := jsonEnum(raw, e.allowed); !ok || !slices.Contains(e.allowed, s) {
				return false, invalid(e.name, "must be one of %s", strings.Join(e.allowed, ", "))
			}
		}
	}
	for _, r := range []struct {
		name     string
		min, max int64
	}{
		{"execution_expires_after", 3600, 259200},
		{"duration", -1, 15},
		{"frames", 29, 289},
		{"seed", -1, 4294967295},
		{"priority", math.MinInt64, math.MaxInt64},
	} {
		raw, ok := f[r.name]
		if !ok {
			continue
		}
		n, ok := integer(raw)
		if !ok {
			return false, invalid(r.name, "must be an integer between %d and %d", r.min, r.max) // also a number past int64
		}
		if n < r.min || n > r.max {
			return false, invalid(r.name, "must be between %d and %d", r.min, r.max)
		}
		if r.name == "frames" && (n-25)%4 != 0 {
			return false, invalid("frames", "must be of the form 25 + 4n (29, 33, … 289)")
		}
		if plain := strconv.FormatInt(n, 10); string(bytes.TrimSpace(raw)) != plain {
			f[r.name] = json.RawMessage(plain)
			rewritten = true
		}
	}
	if raw, ok := f["safety_identifier"]; ok {
		if _, ok := jsonString(raw); !ok {
			return false, invalid("safety_identifier", "must be a string")
		}
	}
	if raw, ok := f["tools"]; ok {
		var tools []map[string]json.RawMessage
		if json.Unmarshal(raw, &tools) != nil {
			return false, invalid("tools", "must be an array of objects")
		}
		for i, tool := range tools {
			if tool == nil {
				return false, invalid(fmt.Sprintf("tools[%d]", i), "must be an object")
			}
		}
	}
	return rewritten, nil
}

// integer reads a JSON number that has an integral value (5 and 5.0, not 5.5 or "5"), exactly:
// 5.0000000000000000001 is not an integer, though float64 would round it to one.
func integer(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' {
		return 0, false
	}
	if plainInteger(raw) {
		// The usual case (timestamps, durations), without a decoder.
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return n, true
		}
	}
	return jsonkeys.Integer(raw)
}

// plainInteger reports whether raw is a JSON integer literal without fraction or exponent:
// -?(0|[1-9][0-9]*).
func plainInteger(raw []byte) bool {
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonString decodes raw as encoding/json decodes it into a string: ok is false for a value that
// is not a string or null (null is ""), and for nil (an absent field).
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false // a member that is absent: no decoder, and no error built for nothing
	}
	if plain, ok := plainString(raw); ok {
		return string(plain), true // the usual string, without a decoder
	}
	var s string // on the heap only here, where the decoder takes its address
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// jsonEnum is jsonString for a value that is usually one of values: that one is answered as the
// element of values, without a copy of its text.
func jsonEnum(raw json.RawMessage, values []string) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		for _, v := range values {
			if string(raw[1:n-1]) == v {
				return v, true
			}
		}
	}
	return jsonString(raw)
}

// jsonBool reports whether raw decodes into a bool as encoding/json decodes it: true or false
// (null too, which callers have taken out), without a decoder for the usual literal.
func jsonBool(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "true", "false":
		return true
	}
	var b bool
	return json.Unmarshal(raw, &b) == nil
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 4 && string(bytes.TrimSpace(raw)) == "null"
}
