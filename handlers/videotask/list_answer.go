package videotask

import (
	"encoding/json"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"strings"
	"unicode/utf8"
)

// listItems reads the items of a provider's task list answer ({"items":[…],…}) as
// json.Unmarshal into []map[string]json.RawMessage reads them, with one map per item whose
// values are slices of the answer rather than copies: the watcher reads up to MaxRefreshBatch
// items per call, every Interval. A repeated items member is read as its last array alone
// (json.Unmarshal decodes it into the maps the earlier one left, merging their members). The
// answer is checked once (json.Valid) and then split by hand, not decoded (json.Unmarshal
// checks it, then scans it again). ok is false when the answer does not decode so (not JSON; not an object or null; an items member that is neither an array
// nor null; an item that is neither an object nor null, which decodes as a nil map).
func listItems(body []byte) (items []map[string]json.RawMessage, ok bool) {
	if !json.Valid(body) {
		return nil, false
	}
	i := jsonkeys.SkipSpace(body, 0)
	switch body[i] {
	case 'n':
		return []map[string]json.RawMessage{}, true // as json.Unmarshal leaves the struct: no items
	case '{':
	default:
		return nil, false
	}
	items = []map[string]json.RawMessage{} // no items member: none, as json.Unmarshal leaves it
	for i = jsonkeys.SkipSpace(body, i+1); body[i] != '}'; {
		end := skipValue(body, i)
		name, ok := memberName(body[i:end])
		if !ok {
			return nil, false
		}
		i = jsonkeys.SkipSpace(body, jsonkeys.SkipSpace(body, end)+1) // past ':'
		end = skipValue(body, i)
		switch matchesItems(name) {
		case nameOther:
		case nameItems:
			// Each items member is decoded (and may fail), the last one's items kept.
			if items, ok = arrayItems(body[i:end]); !ok {
				return nil, false
			}
		default:
			return listItemsDecoded(body) // a name that only Unicode folding may match
		}
		if i = jsonkeys.SkipSpace(body, end); body[i] == ',' {
			i = jsonkeys.SkipSpace(body, i+1)
		}
	}
	return items, true
}

// arrayItems reads the value of a list answer's items member (valid JSON) as listItems does.
func arrayItems(list []byte) (items []map[string]json.RawMessage, ok bool) {
	switch list[0] {
	case 'n':
		return []map[string]json.RawMessage{}, true
	case '[':
	default:
		return nil, false
	}
	items = make([]map[string]json.RawMessage, 0, MaxRefreshBatch)
	for i := jsonkeys.SkipSpace(list, 1); list[i] != ']'; {
		end := skipValue(list, i)
		fields, ok := objectFields(list[i:end])
		if !ok {
			return nil, false
		}
		items = append(items, fields)
		if i = jsonkeys.SkipSpace(list, end); list[i] == ',' {
			i = jsonkeys.SkipSpace(list, i+1)
		}
	}
	return items, true
}

// An object member's name as json.Unmarshal matches it to the struct field "items".
const (
	nameOther   = iota // not items
	nameItems          // items, in any ASCII case
	nameUnicode        // a name with a character beyond ASCII, which case folding might match
)

// matchesItems says how json.Unmarshal would match name to the field "items" (case-insensitive).
func matchesItems(name string) int {
	for i := range len(name) {
		if name[i] >= utf8.RuneSelf {
			return nameUnicode
		}
	}
	if strings.EqualFold(name, "items") {
		return nameItems
	}
	return nameOther
}

// listItemsDecoded is listItems through json.Unmarshal, for the answers whose names need its
// Unicode case folding.
func listItemsDecoded(body []byte) (items []map[string]json.RawMessage, ok bool) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil, false
	}
	items = make([]map[string]json.RawMessage, len(list.Items))
	for i, raw := range list.Items {
		if items[i], ok = objectFields(raw); !ok {
			return nil, false
		}
	}
	return items, true
}

// objectFields reads one valid JSON value (as json.Unmarshal has checked it) as json.Unmarshal
// reads it into a map[string]json.RawMessage: an object's members, the last of a repeated name
// winning, or nil for null. ok is false for any other value.
func objectFields(raw []byte) (fields map[string]json.RawMessage, ok bool) {
	i := jsonkeys.SkipSpace(raw, 0)
	if i == len(raw) {
		return nil, false
	}
	switch raw[i] {
	case 'n':
		return nil, true
	case '{':
	default:
		return nil, false
	}
	fields = make(map[string]json.RawMessage, 8)
	i = jsonkeys.SkipSpace(raw, i+1)
	for i < len(raw) && raw[i] != '}' {
		end := skipValue(raw, i) // the name, a string
		name, ok := memberName(raw[i:end])
		if !ok {
			return nil, false
		}
		i = jsonkeys.SkipSpace(raw, end)
		i = jsonkeys.SkipSpace(raw, i+1) // past ':'
		end = skipValue(raw, i)
		fields[name] = raw[i:end:end]
		i = jsonkeys.SkipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = jsonkeys.SkipSpace(raw, i+1)
		}
	}
	return fields, true
}

// memberName decodes an object member's name (a JSON string, quotes included); the names of
// the task answer need no allocation.
func memberName(quotedName []byte) (string, bool) {
	if n := len(quotedName); n >= 2 {
		inner := quotedName[1 : n-1]
		plain := true
		for _, c := range inner {
			if c == '\\' || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
		if plain {
			return knownName(inner), true
		}
	}
	var s string
	if json.Unmarshal(quotedName, &s) != nil {
		return "", false
	}
	return s, true
}

// knownName returns the names a task answer usually has as constants, others as a new string.
func knownName(b []byte) string {
	switch string(b) {
	case "id":
		return "id"
	case "model":
		return "model"
	case "status":
		return "status"
	case "error":
		return "error"
	case "content":
		return "content"
	case "usage":
		return "usage"
	case "created_at":
		return "created_at"
	case "updated_at":
		return "updated_at"
	case "seed":
		return "seed"
	case "resolution":
		return "resolution"
	case "ratio":
		return "ratio"
	case "duration":
		return "duration"
	case "frames":
		return "frames"
	case "framespersecond":
		return "framespersecond"
	case "service_tier":
		return "service_tier"
	case "execution_expires_after":
		return "execution_expires_after"
	case "generate_audio":
		return "generate_audio"
	case "draft":
		return "draft"
	case "draft_task_id":
		return "draft_task_id"
	case "callback_url":
		return "callback_url"
	case "return_last_frame":
		return "return_last_frame"
	case "camera_fixed":
		return "camera_fixed"
	case "watermark":
		return "watermark"
	case "priority":
		return "priority"
	}
	return string(b)
}

// skipValue returns the index just past the valid JSON value that starts at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at i.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
