package imageedit

import (
	"encoding/json"
	"errors"

	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// checkUnread applies media.Unread to the fields of the object raw at param ("" for the body)
// that are not among known: they are forwarded unread, so every URL in them must be a public
// one. raw has passed checkKeys with known, so it is valid JSON and an unknown key cannot be a
// case variant or a repeat of a checked one. A refused value is 400 invalid_request naming its
// path.
func checkUnread(u *media.Unread, raw json.RawMessage, param string, known ...string) error {
	for _, m := range jsonkeys.OthersValid(raw, known...) {
		field := m.Key
		if param != "" {
			field = param + "." + m.Key
		}
		err := u.Check(m.Value, field)
		if e, ok := errors.AsType[*media.FieldError](err); ok {
			return invalid(e.Param, "%v", e.Err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
