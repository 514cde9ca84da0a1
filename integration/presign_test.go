package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const presignCaddyfile = `{
	{{globals}}
	log {
		output file {{data}}/gateway.log
		level DEBUG
	}
	mediagw {
		storage badger {{data}}
		{{upload}}
		key mg-uploader {
			account studio
		}
		key mg-second {
			account studio
		}
		key mg-elsewhere {
			account studio
			allow_ips 10.0.0.0/8
		}
		key mg-off {
			account studio
			disabled
		}
	}
}

http://127.0.0.1:{{port}} {
	log
	route {
		mediagw_auth
		mediagw_presign /v1/upload/presign
		respond 404
	}
}
`

func uploadBlock(s *s3Server, bucket, extra string) string {
	return fmt.Sprintf(`upload {
			bucket %s
			endpoint %s
			path_style
			access_key_id %s
			secret_access_key %s
			prefix uploads/
			%s
		}`, bucket, s.endpoint, s.access, s.secret, extra)
}

// presigned is a decoded presign answer.
type presigned struct {
	URL       string            `json:"url"`
	PublicURL string            `json:"public_url"`
	Method    string            `json:"method"`
	ObjectKey string            `json:"object_key"`
	Headers   map[string]string `json:"headers"`
	ExpiresAt int64             `json:"expires_at"`
}

func presignFile(t *testing.T, base, key, body string) (response, presigned) {
	t.Helper()
	r := call(t, "POST", base+"/v1/upload/presign", key, body)
	var p presigned
	if r.status == 200 {
		decodeJSON(t, r.body, &p)
	}
	return r, p
}

// upload PUTs data to a presigned URL with the given headers, without any API key.
func upload(t *testing.T, p presigned, headers map[string]string, data []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(p.Method, p.URL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestPresignAgainstRealS3(t *testing.T) {
	s3 := startS3(t)
	s3.createBucket(t, "public-media", true)
	s3.createBucket(t, "private-media", false)
	port := freePort(t)
	g := startGateway(t, presignCaddyfile, map[string]string{
		"port": fmt.Sprint(port), "upload": uploadBlock(s3, "public-media", "rate_limit 1000 60s"),
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	png := []byte("\x89PNG\r\n\x1a\n not really a png, but bytes all the same")

	t.Run("presign, upload, read back from a public bucket", func(t *testing.T) {
		before := time.Now()
		r, p := presignFile(t, base, "mg-uploader", `{"filename":"Holiday Photo.PNG","content_type":"image/png"}`)
		if r.status != 200 {
			t.Fatalf("presign = %d %s", r.status, r.body)
		}
		if p.Method != "PUT" || !strings.HasPrefix(p.ObjectKey, "uploads/") || !strings.HasSuffix(p.ObjectKey, ".png") ||
			strings.Contains(strings.ToLower(p.ObjectKey), "holiday") || strings.Contains(p.ObjectKey, "studio") {
			t.Fatalf("answer = %+v", p)
		}
		if len(p.Headers) != 1 || p.Headers["Content-Type"] != "image/png" {
			t.Fatalf("headers = %v, want exactly Content-Type: image/png", p.Headers)
		}
		if d := time.Unix(p.ExpiresAt, 0).Sub(before); d < 14*time.Minute || d > 16*time.Minute {
			t.Fatalf("expires_at is %v away, want 15m", d)
		}
		if strings.Contains(p.URL, "mg-uploader") || !strings.Contains(p.URL, "X-Amz-Signature") {
			t.Fatalf("url = %s", p.URL)
		}
		if status, body := upload(t, p, p.Headers, png); status != 200 {
			t.Fatalf("upload = %d %s", status, body)
		}
		status, got := get(t, p.PublicURL)
		if status != 200 || !bytes.Equal(got, png) {
			t.Fatalf("GET public_url = %d, %d bytes", status, len(got))
		}
	})

	t.Run("a hostile filename gives only an extension", func(t *testing.T) {
		// The key is the gateway's: a path, an escape or a script in the filename changes
		// nothing but the extension, which is a media one or none.
		shape := regexp.MustCompile(`^uploads/[0-9a-f]{16}/\d{4}/\d\d/\d\d/[0-9a-f]{32}(\.png|\.jpg)?$`)
		for name, ext := range map[string]string{"../../etc/passwd.png": ".png", "a%2F..%2Fb.png": ".png", "..": "", "x/../y.png": ".png",
			"日本語.PNG": ".png", "\u202egnp.png": ".png", "..png": ".png", "a.png/": "", "a.png.": "", `C:\x\..\y.jpg`: ".jpg"} {
			body := string(must(json.Marshal(map[string]string{"filename": name, "content_type": "image/png"})))
			r, p := presignFile(t, base, "mg-uploader", body)
			if r.status != 200 || !shape.MatchString(p.ObjectKey) || !strings.HasSuffix(p.ObjectKey, ext) ||
				strings.Count(p.ObjectKey, ".") != strings.Count(ext, ".") || !strings.HasSuffix(p.PublicURL, "/public-media/"+p.ObjectKey) {
				t.Errorf("filename %q = %d key %q public_url %q; want a key of the gateway's ending in %q", name, r.status, p.ObjectKey, p.PublicURL, ext)
			}
		}
		for _, name := range []string{"a.png%00.html", "a.p%6Eg", "a.mp4?x=1", "a.ＰＮＧ"} {
			body := string(must(json.Marshal(map[string]string{"filename": name, "content_type": "image/png"})))
			if r, _ := presignFile(t, base, "mg-uploader", body); r.status != 400 || r.apiError(t).param != "filename" {
				t.Errorf("filename %q = %d %s; want 400 naming filename", name, r.status, r.body)
			}
		}
	})

	t.Run("changed Content-Type breaks the signature", func(t *testing.T) {
		_, p := presignFile(t, base, "mg-uploader", `{"filename":"a.png","content_type":"image/png"}`)
		status, body := upload(t, p, map[string]string{"Content-Type": "image/jpeg"}, png)
		if status != 403 || !strings.Contains(body, "SignatureDoesNotMatch") {
			t.Fatalf("upload with another Content-Type = %d %s", status, body)
		}
	})

	t.Run("default content type", func(t *testing.T) {
		_, p := presignFile(t, base, "mg-uploader", `{"filename":"notes"}`)
		if p.Headers["Content-Type"] != "application/octet-stream" || strings.Contains(p.ObjectKey, ".") {
			t.Fatalf("answer = %+v", p)
		}
		if status, body := upload(t, p, p.Headers, []byte("x")); status != 200 {
			t.Fatalf("upload = %d %s", status, body)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, key, contentType, body string
			status                       int
			code                         string
		}{
			{"bad JSON", "mg-uploader", "application/json", `{"filename":`, 400, "invalid_request_body"},
			{"not an object", "mg-uploader", "application/json", `["a.png"]`, 400, "invalid_request_body"},
			{"wrong Content-Type", "mg-uploader", "text/plain", `{"filename":"a.png"}`, 400, "invalid_request_body"},
			{"missing filename", "mg-uploader", "application/json", `{"content_type":"image/png"}`, 400, "invalid_upload_request"},
			{"empty filename", "mg-uploader", "application/json", `{"filename":""}`, 400, "invalid_upload_request"},
			{"blank filename", "mg-uploader", "application/json", `{"filename":"  \u3000"}`, 400, "invalid_upload_request"},
			{"filename too long", "mg-uploader", "application/json", `{"filename":"` + strings.Repeat("a", 252) + `.png"}`, 400, "invalid_upload_request"},
			{"control character", "mg-uploader", "application/json", `{"filename":"a\u0000.png"}`, 400, "invalid_upload_request"},
			{"filename not a string", "mg-uploader", "application/json", `{"filename":5}`, 400, "invalid_request_body"},
			{"bad content type", "mg-uploader", "application/json", `{"filename":"a.png","content_type":"png"}`, 400, "invalid_upload_request"},
			{"object key chosen", "mg-uploader", "application/json", `{"filename":"a.png","object_key":"uploads/x/index.html"}`, 400, "invalid_upload_request"},
			{"object key chosen in another case", "mg-uploader", "application/json", `{"filename":"a.png","OBJECT_KEY":"uploads/x/index.html"}`, 400, "invalid_upload_request"},
			{"key chosen in another case", "mg-uploader", "application/json", `{"filename":"a.png","Key":"uploads/x/index.html"}`, 400, "invalid_upload_request"},
			{"no key", "", "application/json", `{"filename":"a.png"}`, 401, "missing_api_key"},
			{"unknown key", "mg-nope", "application/json", `{"filename":"a.png"}`, 401, "invalid_api_key"},
			{"address not allowed", "mg-elsewhere", "application/json", `{"filename":"a.png"}`, 403, "ip_not_allowed"},
			{"disabled key", "mg-off", "application/json", `{"filename":"a.png"}`, 403, "key_disabled"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest("POST", base+"/v1/upload/presign", strings.NewReader(tc.body))
				req.Header.Set("Content-Type", tc.contentType)
				if tc.key != "" {
					req.Header.Set("Authorization", "Bearer "+tc.key)
				}
				r := do(t, req)
				e, _ := r.json(t)["error"].(map[string]any)
				if r.status != tc.status || e["code"] != tc.code || e["message"] == "" || e["type"] == "" {
					t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
				}
			})
		}
		if ok := strings.Repeat("a", 251) + ".png"; len(ok) != 255 {
			t.Fatal("bad fixture")
		} else if r, _ := presignFile(t, base, "mg-uploader", `{"filename":"`+ok+`"}`); r.status != 200 {
			t.Fatalf("a 255-byte filename was refused: %s", r.body)
		}
	})

	t.Run("private bucket: upload works, public read is refused", func(t *testing.T) {
		if err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", uploadBlock(s3, "private-media", ""), 1)); err != nil {
			t.Fatal(err)
		}
		_, p := presignFile(t, base, "mg-uploader", `{"filename":"secret.mp4","content_type":"video/mp4"}`)
		if status, body := upload(t, p, p.Headers, []byte("video bytes")); status != 200 {
			t.Fatalf("upload = %d %s", status, body)
		}
		if status, _ := get(t, p.PublicURL); status != 403 {
			t.Fatalf("GET public_url on a private bucket = %d, want 403", status)
		}
	})

	t.Run("expired URL is refused", func(t *testing.T) {
		if err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", uploadBlock(s3, "public-media", "expires 1s"), 1)); err != nil {
			t.Fatal(err)
		}
		_, p := presignFile(t, base, "mg-uploader", `{"filename":"late.png","content_type":"image/png"}`)
		time.Sleep(2500 * time.Millisecond)
		if status, body := upload(t, p, p.Headers, png); status != 403 {
			t.Fatalf("upload after expiry = %d %s, want 403", status, body)
		}
	})

	t.Run("a URL life storage refuses is refused when the config loads", func(t *testing.T) {
		// S3 (and versitygw) refuse a presigned URL that lives longer than a week, and one of
		// less than a second is signed to live 0 s: every upload would fail.
		for _, life := range []string{"8d", "500ms"} {
			err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", uploadBlock(s3, "public-media", "expires "+life), 1))
			if err == nil || !strings.Contains(err.Error(), "upload expires") {
				t.Fatalf("expires %s: reload = %v, want the config refused", life, err)
			}
		}
		// The longest life storage takes works end to end.
		if err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", uploadBlock(s3, "public-media", "expires 7d"), 1)); err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		_, p := presignFile(t, base, "mg-uploader", `{"filename":"week.png","content_type":"image/png"}`)
		if d := time.Unix(p.ExpiresAt, 0).Sub(before); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
			t.Fatalf("expires_at is %v away, want 7d", d)
		}
		if status, body := upload(t, p, p.Headers, png); status != 200 {
			t.Fatalf("upload with a URL of 7d = %d %s", status, body)
		}
	})

	t.Run("rate limit per key, kept across reloads", func(t *testing.T) {
		cfg := strings.Replace(presignCaddyfile, "{{upload}}", uploadBlock(s3, "public-media", "rate_limit 3 2s"), 1)
		if err := g.reload(cfg); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range 3 {
			if r, _ := presignFile(t, base, "mg-uploader", `{"filename":"a.png"}`); r.status != 200 {
				t.Fatalf("call %d = %d %s", i+1, r.status, r.body)
			}
		}
		r, _ := presignFile(t, base, "mg-uploader", `{"filename":"a.png"}`)
		e, _ := r.json(t)["error"].(map[string]any)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || e["code"] != "rate_limit_exceeded" || err != nil || retry < 1 || retry > 2 {
			t.Fatalf("4th call = %d %s Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
		}
		if r, _ := presignFile(t, base, "mg-second", `{"filename":"a.png"}`); r.status != 200 {
			t.Fatalf("another key of the same account was limited: %d %s", r.status, r.body)
		}
		// The limiter survives a reload with the same limit.
		if err := g.reload(strings.Replace(cfg, "prefix uploads/", "prefix other/", 1)); err != nil {
			t.Fatal(err)
		}
		if r, _ := presignFile(t, base, "mg-uploader", `{"filename":"a.png"}`); r.status != 429 {
			t.Fatalf("after reload = %d %s, want still limited", r.status, r.body)
		}
		time.Sleep(time.Until(start.Add(2*time.Second + 100*time.Millisecond)))
		if r, p := presignFile(t, base, "mg-uploader", `{"filename":"a.png"}`); r.status != 200 || !strings.HasPrefix(p.ObjectKey, "other/") {
			t.Fatalf("after the window = %d %s", r.status, r.body)
		}
	})

	t.Run("credentials from the AWS default chain", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", s3.access)
		t.Setenv("AWS_SECRET_ACCESS_KEY", s3.secret)
		t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
		block := fmt.Sprintf("upload {\n\t\t\tbucket public-media\n\t\t\tendpoint %s\n\t\t\tpath_style\n\t\t}", s3.endpoint)
		if err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", block, 1)); err != nil {
			t.Fatal(err)
		}
		r, p := presignFile(t, base, "mg-second", `{"filename":"env.png","content_type":"image/png"}`)
		if r.status != 200 {
			t.Fatalf("presign = %d %s", r.status, r.body)
		}
		if status, body := upload(t, p, p.Headers, png); status != 200 {
			t.Fatalf("upload signed with environment credentials = %d %s", status, body)
		}
	})

	t.Run("no upload storage configured", func(t *testing.T) {
		if err := g.reload(strings.Replace(presignCaddyfile, "{{upload}}", "", 1)); err != nil {
			t.Fatal(err)
		}
		r, _ := presignFile(t, base, "mg-second", `{"filename":"a.png"}`)
		if e, _ := r.json(t)["error"].(map[string]any); r.status != 503 || e["code"] != "upload_service_unavailable" {
			t.Fatalf("got %d %s", r.status, r.body)
		}
	})

	t.Run("no presigned URL or API key in the logs", func(t *testing.T) {
		logs, err := os.ReadFile(filepath.Join(g.vars["data"], "gateway.log"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(logs, []byte("/v1/upload/presign")) {
			t.Fatal("the access log is empty: the check would prove nothing")
		}
		for _, secret := range []string{"X-Amz-Signature", "X-Amz-Credential", "mg-uploader", "mg-second", s3.secret} {
			if bytes.Contains(logs, []byte(secret)) {
				t.Errorf("the gateway log contains %q", secret)
			}
		}
	})
}
