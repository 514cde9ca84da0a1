package videotask

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// FuzzParseCreateForwardsWhatItChecked: a body ParseCreate accepts is forwarded as bytes that
// ParseCreate reads the same way (model, priced fields, draft ids, return_last_frame) and forwards
// unchanged: what the upstream reads is what was checked, whether the body was forwarded as sent
// or rewritten (callback_url taken out, integers made plain, texts joined).
func FuzzParseCreateForwardsWhatItChecked(f *testing.F) {
	for _, s := range []string{
		body(""),
		body(`"duration":5.0,"seed":1e1,"callback_url":"https://a.example/c"`, okText, okText),
		body(`"resolution":"72\u0030p","ratio":"adaptive","generate_audio":false,"x":{"y":[1]}`),
		body("", okText, `{"type":"te\u0078t","text":"b"}`, `{"type":"image_url","image_url":{"url":"https://x.example/y"},"role":"reference_\u0069mage"}`),
		body(`"frames":33`, `{"type":"draft_task","draft_task":{"id":"t1"}}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseCreate(b)
		if err != nil {
			return
		}
		again, err := ParseCreate(req.Forward)
		if err != nil {
			t.Fatalf("%q was accepted, its forward %q is refused: %v", b, req.Forward, err)
		}
		if again.CallbackURL != "" {
			t.Fatalf("the forward of %q keeps callback_url", b)
		}
		if again.Model != req.Model || again.ReturnLastFrame != req.ReturnLastFrame ||
			!reflect.DeepEqual(again.Billing, req.Billing) || !slices.Equal(draftIDs(again.DraftTasks), draftIDs(req.DraftTasks)) {
			t.Fatalf("%q reads as %+v; its forward %q as %+v", b, req, req.Forward, again)
		}
		if !bytes.Equal(again.Forward, req.Forward) {
			t.Fatalf("the forward %q of %q is forwarded again as %q", req.Forward, b, again.Forward)
		}
	})
}

// draftIDs are the ids of drafts (their params name the items, whose places joined texts move).
func draftIDs(drafts []DraftTaskRef) []string {
	ids := make([]string, len(drafts))
	for i, d := range drafts {
		ids[i] = d.ID
	}
	return ids
}
