package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

// doWith is do with the request's credential headers given.
func doWith(s *Simulator, method, path, body string, header map[string]string) (int, map[string]any) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var m map[string]any
	json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m
}

// klingToken is an HS256 JWT as Kling's reference describes it.
func klingToken(access, secret string, nbf, exp time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := enc.EncodeToString(fmt.Appendf(nil, `{"iss":%q,"exp":%d,"nbf":%d}`, access, exp.Unix(), nbf.Unix()))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + claims))
	return head + "." + claims + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestVideoProtocolTimelines: a DashScope, a Gemini and a Kling task go through their
// provider's states on the common timeline, each answered in its provider's shape.
func TestVideoProtocolTimelines(t *testing.T) {
	clock := testclock.New(time.Unix(1_000_000, 0))
	s := New()
	s.Now, s.APIKey, s.KlingAccessKey, s.KlingSecretKey = clock.Now, "k", "ak", "sk"
	bearer := map[string]string{"Authorization": "Bearer k"}
	dashHeaders := map[string]string{"Authorization": "Bearer k", "X-DashScope-Async": "enable"}
	goog := map[string]string{"X-Goog-Api-Key": "k"}
	kling := map[string]string{"Authorization": "Bearer " + klingToken("ak", "sk", clock.Now().Add(-5*time.Second), clock.Now().Add(30*time.Minute))}

	if code, _ := doWith(s, "POST", "/api/v1/services/aigc/video-generation/video-synthesis", `{"model":"wan","input":{"prompt":"x"}}`, bearer); code != 403 {
		t.Fatalf("a DashScope create without X-DashScope-Async: %d", code)
	}
	_, dash := doWith(s, "POST", "/api/v1/services/aigc/video-generation/video-synthesis", `{"model":"wan","input":{"prompt":"x"}}`, dashHeaders)
	dashID := dash["output"].(map[string]any)["task_id"].(string)
	_, veo := doWith(s, "POST", "/v1beta/models/veo-3:predictLongRunning", `{"instances":[{"prompt":"x"}]}`, goog)
	veoName := veo["name"].(string)
	_, kl := doWith(s, "POST", "/v1/videos/text2video", `{"model_name":"kling-v2","prompt":"x [[fail]]"}`, kling)
	klingID := kl["data"].(map[string]any)["task_id"].(string)
	if !strings.HasPrefix(veoName, "models/veo-3/operations/") || dashID == "" || klingID == "" {
		t.Fatalf("creates: %v %v %v", dash, veo, kl)
	}

	states := func() (string, any, string) {
		_, d := doWith(s, "GET", "/api/v1/tasks/"+dashID, "", bearer)
		_, v := doWith(s, "GET", "/v1beta/"+veoName, "", goog)
		_, k := doWith(s, "GET", "/v1/videos/text2video/"+klingID, "", kling)
		return d["output"].(map[string]any)["task_status"].(string), v["done"], k["data"].(map[string]any)["task_status"].(string)
	}
	if d, v, k := states(); d != "PENDING" || v != nil || k != "submitted" {
		t.Fatalf("queued: %s %v %s", d, v, k)
	}
	clock.Advance(2 * time.Second)
	if d, v, k := states(); d != "RUNNING" || v != nil || k != "processing" {
		t.Fatalf("running: %s %v %s", d, v, k)
	}
	clock.Advance(5 * time.Second)
	if d, v, k := states(); d != "SUCCEEDED" || v != true || k != "failed" {
		t.Fatalf("finished: %s %v %s", d, v, k)
	}
	_, op := doWith(s, "GET", "/v1beta/"+veoName, "", goog)
	uri := op["response"].(map[string]any)["generateVideoResponse"].(map[string]any)["generatedSamples"].([]any)[0].(map[string]any)["video"].(map[string]any)["uri"].(string)
	file := strings.TrimPrefix(uri, "http://example.com")
	if code, _ := doWith(s, "GET", file, "", goog); code != 200 || !strings.HasSuffix(file, ":download?alt=media") {
		t.Fatalf("the Veo file %s: %d", uri, code)
	}
	if code, _ := doWith(s, "GET", file, "", nil); code != 401 {
		t.Fatalf("the Veo file without the key: %d", code)
	}
}

// TestKlingRefusesBadTokens: a Kling request with the plain API key, a token signed with another
// secret, an expired token or one not yet valid is refused (401); a valid one is served.
func TestKlingRefusesBadTokens(t *testing.T) {
	clock := testclock.New(time.Unix(1_000_000, 0))
	s := New()
	s.Now, s.APIKey, s.KlingAccessKey, s.KlingSecretKey = clock.Now, "k", "ak", "sk"
	now := clock.Now()
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"api key", "k", 401},
		{"other secret", klingToken("ak", "other", now.Add(-time.Second), now.Add(time.Minute)), 401},
		{"other access key", klingToken("bk", "sk", now.Add(-time.Second), now.Add(time.Minute)), 401},
		{"expired", klingToken("ak", "sk", now.Add(-time.Hour), now.Add(-time.Second)), 401},
		{"not yet valid", klingToken("ak", "sk", now.Add(time.Minute), now.Add(time.Hour)), 401},
		{"valid", klingToken("ak", "sk", now.Add(-time.Second), now.Add(time.Minute)), 200},
	} {
		code, _ := doWith(s, "POST", "/v1/videos/text2video", `{"model_name":"kling-v2","prompt":"x"}`, map[string]string{"Authorization": "Bearer " + tc.token})
		if code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
}

// TestOpenAIVideos: a video created with a JSON body and one with a multipart body (as the SDKs
// send it) go queued, in_progress with progress, completed; the content downloads once
// completed; a failing prompt ends failed with its error; delete removes the video.
func TestOpenAIVideos(t *testing.T) {
	clock := testclock.New(time.Unix(1_000_000, 0))
	s := New()
	s.Now, s.APIKey = clock.Now, "k"
	bearer := map[string]string{"Authorization": "Bearer k"}
	code, v := doWith(s, "POST", "/v1/videos", `{"model":"sora-2","prompt":"a cat","seconds":"8","size":"1280x720"}`, bearer)
	id, _ := v["id"].(string)
	if code != 200 || !strings.HasPrefix(id, "video_") || v["status"] != "queued" || v["seconds"] != "8" || v["size"] != "1280x720" {
		t.Fatalf("create: %d %v", code, v)
	}
	r := httptest.NewRequest("POST", "/v1/videos", strings.NewReader("--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na dog "+FailMarker+"\r\n--b--\r\n"))
	r.Header.Set("Authorization", "Bearer k")
	r.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var failing map[string]any
	json.Unmarshal(w.Body.Bytes(), &failing)
	if w.Code != 200 || failing["seconds"] != "4" || failing["model"] != "sora-2" {
		t.Fatalf("multipart create: %d %s", w.Code, w.Body)
	}
	if code, _ := doWith(s, "POST", "/v1/videos", `{"prompt":"x","seconds":"5"}`, bearer); code != 400 {
		t.Fatalf("seconds 5: %d", code)
	}
	if code, _ := doWith(s, "GET", "/v1/videos/"+id+"/content", "", bearer); code != 404 {
		t.Fatalf("content of a queued video: %d", code)
	}
	clock.Advance(2*time.Second + 2500*time.Millisecond)
	if _, got := doWith(s, "GET", "/v1/videos/"+id, "", bearer); got["status"] != "in_progress" || got["progress"] != 50.0 {
		t.Fatalf("running: %v", got)
	}
	clock.Advance(3 * time.Second)
	if _, got := doWith(s, "GET", "/v1/videos/"+id, "", bearer); got["status"] != "completed" || got["progress"] != 100.0 {
		t.Fatalf("completed: %v", got)
	}
	if _, got := doWith(s, "GET", "/v1/videos/"+failing["id"].(string), "", bearer); got["status"] != "failed" || got["error"] == nil {
		t.Fatalf("failed: %v", got)
	}
	if code, _ := doWith(s, "GET", "/v1/videos/"+id+"/content", "", bearer); code != 200 {
		t.Fatalf("content: %d", code)
	}
	if code, _ := doWith(s, "GET", "/v1/videos/"+id+"/content", "", nil); code != 401 {
		t.Fatalf("content without the key: %d", code)
	}
	if _, list := doWith(s, "GET", "/v1/videos", "", bearer); len(list["data"].([]any)) != 2 {
		t.Fatalf("list: %v", list)
	}
	if code, got := doWith(s, "DELETE", "/v1/videos/"+id, "", bearer); code != 200 || got["deleted"] != true {
		t.Fatalf("delete: %d %v", code, got)
	}
	if code, _ := doWith(s, "GET", "/v1/videos/"+id, "", bearer); code != 404 {
		t.Fatalf("after the delete: %d", code)
	}
}
