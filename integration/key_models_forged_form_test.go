package integration

import (
	"bytes"
	"encoding/binary"
	"maps"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestForgedFormBodyGetsNoOtherKeysVideo: a key restricted to video-a cannot have the answer of
// its account's unrestricted key's /v1/videos form create of video-b replayed by sending, with the
// same Idempotency-Key and as JSON, the bytes the gateway's idempotency hash reads a form as (its
// parts framed behind "multipart/form-data\x00", which anyone can read in the source): the model
// gate finds no model in those bytes, and before, the hash matched the form's, so the guard
// replayed the video-b video to it.
func TestForgedFormBodyGetsNoOtherKeysVideo(t *testing.T) {
	ark := newArkHeld(t)
	base, _ := startSimGateway(t, keyModelsCaddyfile, map[string]string{"storage": "storage badger " + t.TempDir(), "ark": ark.URL})
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for _, f := range [][2]string{{"model", "video-b"}, {"prompt", "b"}, {"seconds", "4"}} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	mw.Close()
	post := func(key, contentType string, body []byte) response {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/videos", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Idempotency-Key", "kmf-1")
		return do(t, req)
	}
	r := post("mg-km-all", mw.FormDataContentType(), form.Bytes())
	videoB := r.field("id")
	if r.status != http.StatusOK || videoB == "" {
		t.Fatalf("form create of video-b = %d %s", r.status, r.body)
	}
	if r := post("mg-km-a", mw.FormDataContentType(), form.Bytes()); r.status != http.StatusForbidden {
		t.Fatalf("the video-a key's retry of the form = %d %s; want 403", r.status, r.body)
	}
	forged := append([]byte("multipart/form-data\x00"), framedFormParts(form.Bytes(), mw.Boundary())...)
	r = post("mg-km-a", "application/json", forged)
	if strings.Contains(string(r.body), videoB) || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the video-a key's forged body = %d %s (replayed %q); want a refusal, never the video-b video %s",
			r.status, r.body, r.header.Get("Idempotent-Replayed"), videoB)
	}
}

// framedFormParts is a form's parts as the idempotency hash frames them (each part's header
// count, sorted header names and values, and content, each length-prefixed).
func framedFormParts(body []byte, boundary string) []byte {
	var out bytes.Buffer
	field := func(b []byte) {
		out.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		out.Write(b)
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextRawPart()
		if err != nil {
			return out.Bytes()
		}
		var content bytes.Buffer
		if _, err := content.ReadFrom(p); err != nil {
			return out.Bytes()
		}
		names := slices.Sorted(maps.Keys(p.Header))
		field(binary.BigEndian.AppendUint64(nil, uint64(len(names))))
		for _, name := range names {
			field([]byte(name))
			field(binary.BigEndian.AppendUint64(nil, uint64(len(p.Header[name]))))
			for _, v := range p.Header[name] {
				field([]byte(v))
			}
		}
		field(content.Bytes())
	}
}
