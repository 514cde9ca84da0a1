package providers

import (
	"bytes"
	"encoding/json"
	"sort"
)

// ErrorModels maps the upstream's ids that an error answer of the dispatch may name in its text
// to the client's: the request's model when the provider's model_map renamed it, and the tools'
// models (ToolModels). nil when nothing was renamed.
func (d *Dispatch) ErrorModels() map[string]string {
	if d.UpstreamModel == d.Model && len(d.ToolModels) == 0 {
		return nil
	}
	ids := make(map[string]string, len(d.ToolModels)+1)
	for up, client := range d.ToolModels {
		ids[up] = client
	}
	if d.UpstreamModel != d.Model {
		ids[d.UpstreamModel] = d.Model
	}
	return ids
}

// ShowIDsInText returns text, an error answer (JSON or plain text), with each upstream id of ids
// that it names as a word (not within a longer id: "up-chat" in "model `up-chat` does not
// exist", not in "up-chat-2" or "x.up-chat") replaced by the client's, and whether any was. The
// text is read once: a client's id written in is never read again as an upstream's (two ids
// swapped, or one a word of another, show each where the answer named its upstream id), and
// where several ids begin at one place the longest is taken. An id written with JSON escapes is
// not found, and a pair whose ids JSON would have to escape is left alone, so a JSON answer stays
// the JSON it was.
func ShowIDsInText(text []byte, ids map[string]string) ([]byte, bool) {
	ups := make([]string, 0, len(ids))
	for up, client := range ids {
		if up != "" && up != client && plainJSON(up) && plainJSON(client) {
			ups = append(ups, up)
		}
	}
	if len(ups) == 0 {
		return text, false
	}
	sort.Slice(ups, func(i, j int) bool { // a longer id first; ties in a fixed order
		return len(ups[i]) > len(ups[j]) || len(ups[i]) == len(ups[j]) && ups[i] < ups[j]
	})
	var out []byte
	last := 0
	for start := 0; start < len(text); start++ {
		if start > 0 && idByte(text[start-1]) {
			continue // within a word
		}
		for _, up := range ups {
			end := start + len(up)
			if !bytes.HasPrefix(text[start:], []byte(up)) || end < len(text) && idByte(text[end]) && !sentenceEnd(text, end) {
				continue
			}
			out = append(append(out, text[last:start]...), ids[up]...)
			last = end
			start = end - 1
			break
		}
	}
	if out == nil {
		return text, false
	}
	return append(out, text[last:]...), true
}

// idByte reports whether c may be part of a model id.
func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// sentenceEnd reports whether the byte at i of text is a full stop that ends a sentence (not
// followed by another byte of an id), rather than a part of an id ("up-chat." against "up-chat.5").
func sentenceEnd(text []byte, i int) bool {
	return text[i] == '.' && (i+1 == len(text) || !idByte(text[i+1]) || text[i+1] == '.')
}

// plainJSON reports whether s is written in a JSON string as it is, without escapes.
func plainJSON(s string) bool {
	q, err := json.Marshal(s)
	return err == nil && len(q) == len(s)+2
}
