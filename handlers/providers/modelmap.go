package providers

import (
	"encoding/json"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// ReplaceModel returns body with the value of every top-level "model" string member replaced by
// model (jsonkeys.SetMember). Nothing else changes: the other bytes, the member order and the
// white space stay as they were, so what was checked is what is sent; a body whose model is
// already model is returned itself, not copied. ok is false when body is not a JSON object with
// a top-level string "model".
func ReplaceModel(body []byte, model string) ([]byte, bool) {
	quoted, err := json.Marshal(model)
	if err != nil {
		return body, false
	}
	out, err := jsonkeys.SetMember(body, "model", quoted, jsonkeys.MemberEdit{Replaces: isString})
	if err != nil {
		return body, false
	}
	return out, true
}

// isString reports whether raw, a JSON value, is a string.
func isString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
