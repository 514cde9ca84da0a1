package passthrough

import (
	"encoding/json"
	"mime"
	"unicode/utf8"
)

// mediaType parses a Content-Type value as mime.ParseMediaType does. The common plain
// "application/json" is answered without parsing (and without allocating).
func mediaType(contentType string) (string, map[string]string, error) {
	if contentType == "application/json" {
		return contentType, nil, nil
	}
	return mime.ParseMediaType(contentType)
}

// unmarshalString decodes a JSON value that must be a string, as json.Unmarshal into a string
// does. A string without escapes, control characters or invalid UTF-8 (nearly every model id) is
// taken as it stands; anything else goes through json.Unmarshal.
func unmarshalString(raw json.RawMessage, s *string) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		inner := raw[1 : n-1]
		plain := true
		for _, c := range inner {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(inner) {
			*s = string(inner)
			return nil
		}
	}
	return json.Unmarshal(raw, s)
}
