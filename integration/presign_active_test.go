package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestPresignRefusesActiveContent presigns against real S3 (versitygw): HTML, SVG, XHTML and
// JavaScript uploads, in any spelling, are refused unless allowed_content_types names them; an
// explicitly listed type is signed in canonical form and storage serves the object with it.
func TestPresignRefusesActiveContent(t *testing.T) {
	s3 := startS3(t)
	s3.createBucket(t, "active-media", true)
	port := freePort(t)
	vars := map[string]string{"port": fmt.Sprint(port), "upload": uploadBlock(s3, "active-media", "")}
	g := startGateway(t, presignCaddyfile, vars)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	active := []string{"text/html", "TEXT/HTML; charset=utf-8", "image/svg+xml", "Image/SVG+XML ;charset=x",
		"application/xhtml+xml", "application/javascript", "text/javascript; charset=utf-8", "text/xml"}
	refused := func(label string) {
		for _, ct := range active {
			r, _ := presignFile(t, base, "mg-uploader", fmt.Sprintf(`{"filename":"x.html","content_type":%q}`, ct))
			e, _ := r.json(t)["error"].(map[string]any)
			if r.status != 400 || e == nil || e["code"] != "invalid_upload_request" || e["param"] != "content_type" {
				t.Errorf("%s: presign %q = %d %s, want 400 invalid_upload_request", label, ct, r.status, r.body)
			}
		}
	}
	refused("default")
	if r, _ := presignFile(t, base, "mg-uploader", `{"filename":"a.png","content_type":"image/png"}`); r.status != 200 {
		t.Fatalf("presign image/png = %d %s", r.status, r.body)
	}

	// Wildcards do not let active content in; an exact entry does.
	g.vars["upload"] = uploadBlock(s3, "active-media", "allowed_content_types image/* text/* application/* Text/HTML")
	if err := g.reload(presignCaddyfile); err != nil {
		t.Fatal(err)
	}
	active = active[2:] // all but the two text/html spellings
	refused("wildcards")
	r, p := presignFile(t, base, "mg-uploader", `{"filename":"page.html","content_type":"TEXT/HTML; Charset=UTF-8"}`)
	if r.status != 200 || p.Headers["Content-Type"] != "text/html; charset=UTF-8" {
		t.Fatalf("listed text/html: %d %s", r.status, r.body)
	}
	if status, body := upload(t, p, p.Headers, []byte("<p>operator allowed this</p>")); status/100 != 2 {
		t.Fatalf("upload = %d %s", status, body)
	}
	resp, err := client.Get(p.PublicURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("storage serves the object as %q", ct)
	}
}
