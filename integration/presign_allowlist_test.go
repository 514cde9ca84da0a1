package integration

import (
	"fmt"
	"testing"
)

// TestPresignAcceptsMediaTypesOnly presigns against real S3 (versitygw) with no
// allowed_content_types: the media types of an explicit list (and application/octet-stream, the
// default) are signed; any other type (message/rfc822, multipart/related, application/pdf …)
// and a filename whose extension is not a media one (.mht, .php) are refused with 400 naming the
// field.
func TestPresignAcceptsMediaTypesOnly(t *testing.T) {
	s3 := startS3(t)
	s3.createBucket(t, "listed-media", true)
	port := freePort(t)
	startGateway(t, presignCaddyfile, map[string]string{"port": fmt.Sprint(port), "upload": uploadBlock(s3, "listed-media", "")})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	for _, tc := range []struct{ body, param string }{
		{`{"filename":"a.png","content_type":"image/png"}`, ""},
		{`{"filename":"Clip.MP4","content_type":"video/mp4"}`, ""},
		{`{"filename":"talk.mp3","content_type":"audio/mpeg"}`, ""},
		{`{"filename":"notes"}`, ""},
		{`{"filename":"mail.eml","content_type":"message/rfc822"}`, "content_type"},
		{`{"filename":"page","content_type":"multipart/related; boundary=x"}`, "content_type"},
		{`{"filename":"doc.pdf","content_type":"application/pdf"}`, "content_type"},
		{`{"filename":"a.png","content_type":"image/x-unknown-thing"}`, "content_type"},
		{`{"filename":"page.mht","content_type":"image/png"}`, "filename"},
		{`{"filename":"shell.php","content_type":"image/jpeg"}`, "filename"},
		{`{"filename":"x.phtml"}`, "filename"},
	} {
		r, _ := presignFile(t, base, "mg-uploader", tc.body)
		if tc.param == "" {
			if r.status != 200 {
				t.Errorf("presign %s = %d %s, want 200", tc.body, r.status, r.body)
			}
			continue
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != 400 || e == nil || e["code"] != "invalid_upload_request" || e["param"] != tc.param {
			t.Errorf("presign %s = %d %s, want 400 invalid_upload_request naming %s", tc.body, r.status, r.body, tc.param)
		}
	}
}
