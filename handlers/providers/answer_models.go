package providers

import (
	"bytes"
	"encoding/json"
	"slices"
)

// AnswerModels are the model ids an answer of an upstream shows under the names the client
// uses (model_map): an answer must never show the provider's names.
type AnswerModels struct {
	// Model is the client's id of the request's model, shown for the answer's top-level "model"
	// and for its "response" object's (the events of a Responses stream); "" when the model was
	// not mapped, and then those are left as they are.
	Model string
	// Tools maps the upstream's id of a tool's model (a Responses image_generation tool) to the
	// client's, shown for the "model" of each object of the answer's top-level "tools" and of its
	// "response" object's "tools". Other tool models are left as they are.
	Tools map[string]string
}

// Any reports whether m shows any model: an answer needs no rewriting otherwise.
func (m AnswerModels) Any() bool { return m.Model != "" || len(m.Tools) > 0 }

// Show returns body, one JSON object, with the models m names shown as the client's (see
// AnswerModels). Nothing else changes: the other bytes, the member order and the white space
// stay as they were. changed is false, and body is returned as it is, when nothing was shown or
// body is not one JSON object.
func (m AnswerModels) Show(body []byte) (shown []byte, changed bool) {
	w := modelWalk{model: m.Model, nested: true}
	if len(m.Tools) > 0 {
		w.toolModel = func(up string) (string, bool) {
			client, ok := m.Tools[up]
			return client, ok
		}
	}
	if !w.object(body, 0, true) || len(w.spans) == 0 || !onlySpaceAfterValue(body) {
		return body, false
	}
	return w.apply(body), true
}

// ReplaceToolModels returns body, one JSON object, with the string "model" of each object of its
// top-level "tools" (a list of tool objects, or one) that rename renames replaced by the new
// name: a request's tools on their way upstream (model_map), read as AnswerModels.Show reads an
// answer's. Nothing else changes. ok is false when body is not one JSON object.
func ReplaceToolModels(body []byte, rename func(string) (string, bool)) (replaced []byte, ok bool) {
	w := modelWalk{toolModel: rename}
	if !w.object(body, 0, true) || !onlySpaceAfterValue(body) {
		return body, false
	}
	return w.apply(body), true
}

// modelWalk finds the spans of a JSON object's model values to rename: the top-level "model"
// (shown as model, when not ""), the "model" of each object of the top-level "tools" (renamed by
// toolModel, when not nil), and with nested, the same in the top-level "response" object (the
// events of a Responses stream).
type modelWalk struct {
	model     string
	toolModel func(string) (string, bool)
	nested    bool
	spans     []modelSpan
}

// modelSpan is a JSON string value, from start to end, to be replaced by shown.
type modelSpan struct {
	start, end int64
	shown      string
}

// apply returns body with each span replaced by its name, quoted.
func (w *modelWalk) apply(body []byte) []byte {
	if len(w.spans) == 0 {
		return body
	}
	quoted := make(map[string][]byte, 2)
	out := make([]byte, 0, len(body)+64)
	var last int64
	for _, s := range w.spans {
		q, ok := quoted[s.shown]
		if !ok {
			q, _ = json.Marshal(s.shown) // a string always marshals
			quoted[s.shown] = q
		}
		out = append(out, body[last:s.start]...)
		out = append(out, q...)
		last = s.end
	}
	return append(out, body[last:]...)
}

// object reads the JSON object data, which stands at offset base of the whole: the whole itself
// (top), or its "response" object.
func (w *modelWalk) object(data []byte, base int64, top bool) bool {
	return members(data, func(key string, value []byte, at int64) bool {
		switch {
		case key == "model" && w.model != "":
			w.rename(value, base+at, func(string) (string, bool) { return w.model, true })
		case key == "tools" && w.toolModel != nil:
			return w.tools(value, base+at)
		case key == "response" && top && w.nested && len(value) > 0 && value[0] == '{':
			return w.object(value, base+at, false)
		}
		return true
	})
}

// tools reads a "tools" value (a list of tool objects, or one), at offset base of the whole.
func (w *modelWalk) tools(data []byte, base int64) bool {
	tool := func(obj []byte, at int64) bool {
		return members(obj, func(key string, value []byte, vat int64) bool {
			if key == "model" {
				w.rename(value, at+vat, w.toolModel)
			}
			return true
		})
	}
	switch {
	case len(data) > 0 && data[0] == '{':
		return tool(data, base)
	case len(data) == 0 || data[0] != '[':
		return true // not a list of tools: nothing to show
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '['
		return false
	}
	for dec.More() {
		at := valueStart(data, dec.InputOffset())
		var elem json.RawMessage
		if dec.Decode(&elem) != nil {
			return false
		}
		if len(elem) > 0 && elem[0] == '{' && !tool(elem, base+at) {
			return false
		}
	}
	return true
}

// rename records the string value at offset at of the whole, renamed as name gives it.
func (w *modelWalk) rename(value []byte, at int64, name func(string) (string, bool)) {
	var id string
	if json.Unmarshal(value, &id) != nil {
		return // not a string: left as it is
	}
	if shown, ok := name(id); ok && shown != id {
		w.spans = append(w.spans, modelSpan{at, at + int64(len(value)), shown})
	}
}

// members calls visit with each member of the JSON object data: its key, its raw value and the
// value's offset in data, in order, until visit returns false. It reports whether data was read
// through as one object and every visit returned true.
func members(data []byte, visit func(key string, value []byte, at int64) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		at := valueStart(data, dec.InputOffset())
		var value json.RawMessage
		if dec.Decode(&value) != nil || !visit(key, value, at) {
			return false
		}
	}
	tok, err := dec.Token()
	return err == nil && tok == json.Delim('}')
}

// valueStart is the offset of the value that follows offset at of data: after the ':' (or ',')
// and white space.
func valueStart(data []byte, at int64) int64 {
	for at < int64(len(data)) && (data[at] == ':' || data[at] == ',' || isSpace(data[at])) {
		at++
	}
	return at
}

// onlySpaceAfterValue reports whether body holds one JSON value and white space only.
func onlySpaceAfterValue(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return false
	}
	return slices.IndexFunc(body[dec.InputOffset():], func(c byte) bool { return !isSpace(c) }) < 0
}
