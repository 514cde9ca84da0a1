package videotask

import (
	"encoding/json"
	"errors"

	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// The create body's fields that the gateway forwards unread are checked by media.Unread: its
// unknown fields, the items of tools, and the unknown fields of each content item and of the
// item's data object (image_url, video_url, audio_url, draft_task). Every object read here has
// passed jsonkeys' rule (members), so it is valid JSON and an unknown key cannot be a case
// variant or a repeat of a checked one. A refused value is 400 invalid_request naming its path.

// checkUnreadFields checks the unknown fields of the body and the items of tools.
func checkUnreadFields(u *media.Unread, body []byte, fields map[string]json.RawMessage) error {
	for _, m := range jsonkeys.OthersValid(body, createFields...) {
		if err := checkUnread(u, m.Value, m.Key); err != nil {
			return err
		}
	}
	return checkUnread(u, fields["tools"], "tools")
}

// checkUnreadItem checks the unknown fields of the content item raw at field, whose checked
// fields are item, and those of its typ's data object.
func checkUnreadItem(u *media.Unread, raw json.RawMessage, item contentItem, typ, field string) error {
	for _, m := range jsonkeys.OthersValid(raw, contentFields...) {
		if err := checkUnread(u, m.Value, field+"."+m.Key); err != nil {
			return err
		}
	}
	known := mediaFields
	if typ == "draft_task" {
		known = draftFields
	}
	for _, m := range jsonkeys.OthersValid(item[typ], known...) {
		if err := checkUnread(u, m.Value, field+"."+typ+"."+m.Key); err != nil {
			return err
		}
	}
	return nil
}

// checkUnread checks one unread value; nil (an absent field) passes.
func checkUnread(u *media.Unread, value json.RawMessage, param string) error {
	if value == nil {
		return nil
	}
	err := u.Check(value, param)
	if e, ok := errors.AsType[*media.FieldError](err); ok {
		return invalid(e.Param, "%v", e.Err)
	}
	return err
}
