package integration

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// videosFrontCaddyfile puts a DashScope (Wan), a Gemini (Veo) and a Kling provider, each a strict fake,
// behind both fronts: the OpenAI-style /v1/videos and the task API. Wan is priced at 0.01 per
// second, so that a create holds its estimate against alice's balance.
const videosFrontCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		watcher {
			interval 200ms
		}
		provider wan {
			base_url {{dash_url}}
			api_key dash-upstream-key
			protocol dashscope
			models wan2.2-t2v-plus
		}
		provider veo {
			base_url {{gemini_url}}
			api_key gemini-upstream-key
			protocol gemini
			model_map veo-client veo-3.0-generate-001
		}
		provider kling {
			base_url {{kling_url}}
			access_key kling-access-key
			secret_key kling-secret-key
			protocol kling
			models kling-v2-1-master
		}
		price wan2.2-t2v-plus {
			second 0.01
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_videos /v1/videos* {
			refresh_interval 100ms
		}
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}
`

type videosFront struct {
	base   string
	admin  string
	dash   *fakeDashScope
	gemini *fakeGemini
	kling  *fakeKling
}

func startVideosFront(t *testing.T) videosFront {
	t.Helper()
	dash, dashURL := newFakeDashScope(t, "dash-upstream-key")
	gem, gemURL := newFakeGemini(t, "gemini-upstream-key")
	kling, klingURL := newFakeKling(t, "kling-access-key", "kling-secret-key")
	base, g := startSimGateway(t, videosFrontCaddyfile, map[string]string{"dash_url": dashURL, "gemini_url": gemURL, "kling_url": klingURL})
	return videosFront{base: base, admin: "http://" + g.admin, dash: dash, gemini: gem, kling: kling}
}

// finished polls a video through the front until it completed or failed (at most 30 s).
func (v videosFront) finished(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call(t, "GET", v.base+"/v1/videos/"+id, "mg-alice", nil)
		if r.status != 200 {
			t.Fatalf("retrieve %s = %d %s", id, r.status, r.body)
		}
		m := r.json(t)
		if m["status"] == "completed" || m["status"] == "failed" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("video %s still %v after 30 s", id, m["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendAsIs sends a request with a key and no body, and answers a redirect as it is.
func sendAsIs(t *testing.T, method, url, key string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestVideosFrontOverAdaptors drives the OpenAI-style front over two non-Ark protocols: a Wan
// video (DashScope) completes with the provider's seconds, and its content redirects to the
// provider's result; a Veo video (Gemini), whose result needs the operator's key, is streamed
// byte for byte without the key or the provider's address reaching the client. The same video
// is a task of the task API. Bob gets, for every call on alice's video, the answer of an
// unknown id.
func TestVideosFrontOverAdaptors(t *testing.T) {
	v := startVideosFront(t)

	r := call(t, "POST", v.base+"/v1/videos", "mg-alice", `{"model":"wan2.2-t2v-plus","prompt":"a lighthouse at dawn","seconds":"5","size":"1280x720"}`)
	if r.status != 200 || r.json(t)["status"] != "queued" || r.json(t)["object"] != "video" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	wan := r.json(t)["id"].(string)
	got := v.finished(t, wan)
	if got["status"] != "completed" || got["progress"] != 100.0 || got["seconds"] != "5" || got["prompt"] != "a lighthouse at dawn" || got["model"] != "wan2.2-t2v-plus" {
		t.Fatalf("wan video = %v", got)
	}
	if creates := v.dash.log.matching("POST", "/api/v1/services/"); len(creates) != 1 || !strings.Contains(string(creates[0].Body), `"a lighthouse at dawn"`) {
		t.Fatalf("dashscope creates: %+v", creates)
	}
	c := sendAsIs(t, "GET", v.base+"/v1/videos/"+wan+"/content", "mg-alice")
	if c.status != http.StatusFound || !strings.HasPrefix(c.header.Get("Location"), "https://dashscope-result.example/") {
		t.Fatalf("wan content = %d %v", c.status, c.header)
	}
	if task := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+wan, "mg-alice", nil); task.status != 200 || task.json(t)["status"] != "succeeded" {
		t.Fatalf("the video through the task API = %d %s", task.status, task.body)
	}

	r = call(t, "POST", v.base+"/v1/videos", "mg-alice", `{"model":"veo-client","prompt":"a quiet harbour"}`)
	if r.status != 200 {
		t.Fatalf("create veo = %d %s", r.status, r.body)
	}
	veo := r.json(t)["id"].(string)
	if got := v.finished(t, veo); got["status"] != "completed" {
		t.Fatalf("veo video = %v", got)
	}
	c = sendAsIs(t, "GET", v.base+"/v1/videos/"+veo+"/content", "mg-alice")
	if c.status != 200 || !bytes.Equal(c.body, v.gemini.Video) || c.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("veo content = %d %v (%d bytes), want the provider's %d bytes", c.status, c.header, len(c.body), len(v.gemini.Video))
	}
	if strings.Contains(string(c.body)+c.header.Get("Location"), "gemini-upstream-key") {
		t.Fatal("the operator's key reached the client")
	}

	for _, id := range []string{wan, veo} {
		for _, call := range []struct{ method, suffix string }{{"GET", ""}, {"GET", "/content"}, {"DELETE", ""}} {
			theirs := sendAsIs(t, call.method, v.base+"/v1/videos/"+id+call.suffix, "mg-bob")
			unknown := sendAsIs(t, call.method, v.base+"/v1/videos/cgt-000000000000000000000000"+call.suffix, "mg-bob")
			if theirs.status != 404 || theirs.status != unknown.status || string(theirs.body) != string(unknown.body) {
				t.Fatalf("bob's %s %s of alice's video = %d %s; of an unknown id = %d %s", call.method, call.suffix, theirs.status, theirs.body, unknown.status, unknown.body)
			}
		}
	}
	// Newest first; two videos created within the same second may come in either order, and
	// the cursor then gives the other one.
	list := call(t, "GET", v.base+"/v1/videos?limit=1", "mg-alice", nil)
	m := list.json(t)
	first, _ := m["first_id"].(string)
	if list.status != 200 || m["object"] != "list" || m["has_more"] != true || (first != veo && first != wan) || m["last_id"] != first {
		t.Fatalf("alice's first page = %d %s", list.status, list.body)
	}
	other := map[string]string{veo: wan, wan: veo}[first]
	if list = call(t, "GET", v.base+"/v1/videos?limit=1&after="+first, "mg-alice", nil); list.json(t)["first_id"] != other || list.json(t)["has_more"] != false {
		t.Fatalf("alice's second page after %s = %s", first, list.body)
	}
	if list = call(t, "GET", v.base+"/v1/videos", "mg-bob", nil); !strings.Contains(string(list.body), `"data":[]`) {
		t.Fatalf("bob's list = %s", list.body)
	}
	if d := call(t, "DELETE", v.base+"/v1/videos/"+wan, "mg-alice", nil); d.status != 200 || d.json(t)["deleted"] != true || d.json(t)["object"] != "video.deleted" {
		t.Fatalf("delete = %d %s", d.status, d.body)
	}
}

// TestVideosFrontMultipartFile: a create whose form carries the image itself is 400 in OpenAI's
// shape, pointing to presign, and reaches no provider; the same form with the image's public URL
// creates the video, with that URL as Kling's first frame (image-to-video). A part given twice,
// the first one empty, is 400 too, and so are JSON that is not UTF-8 and a form without its
// boundary.
func TestVideosFrontMultipartFile(t *testing.T) {
	v := startVideosFront(t)
	form := func(file bool) (string, *bytes.Buffer) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("model", "kling-v2-1-master")
		mw.WriteField("prompt", "a fox in the snow")
		if file {
			fw, _ := mw.CreateFormFile("input_reference", "fox.png")
			fw.Write(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1<<10))
		} else {
			mw.WriteField("input_reference[image_url]", "https://example.com/fox.png")
		}
		mw.Close()
		return mw.FormDataContentType(), &b
	}
	post := func(ct string, body io.Reader) response {
		req, _ := http.NewRequest("POST", v.base+"/v1/videos", body)
		req.Header.Set("Authorization", "Bearer mg-alice")
		req.Header.Set("Content-Type", ct)
		return do(t, req)
	}
	r := post(form(true))
	e, _ := r.json(t)["error"].(map[string]any)
	if r.status != 400 || e == nil || e["param"] != "input_reference" || !strings.Contains(e["message"].(string), "/v1/upload/presign") {
		t.Fatalf("a form with a file = %d %s", r.status, r.body)
	}
	if creates := v.kling.log.matching("POST", "/"); len(creates) != 0 {
		t.Fatalf("the refused create reached the provider: %+v", creates)
	}
	if r = post(form(false)); r.status != 200 || r.json(t)["status"] != "queued" {
		t.Fatalf("the form with the image's URL = %d %s", r.status, r.body)
	}
	creates := v.kling.log.matching("POST", "/v1/videos/image2video")
	if len(creates) != 1 || !strings.Contains(string(creates[0].Body), `"image":"https://example.com/fox.png"`) {
		t.Fatalf("kling creates: %+v", creates)
	}

	// A part given twice is refused even when the first one is empty: a decoder that reads the
	// first would see no prompt, no seconds or no image where the front took the second. Before
	// the fix the second was taken.
	for _, tc := range []struct{ param, first, second, value string }{
		{"prompt", "prompt", "prompt", "a second prompt"},
		{"seconds", "seconds", "seconds", "10"},
		{"input_reference", "input_reference", "input_reference[image_url]", "https://example.com/fox.png"},
		{"input_reference", "input_reference[image_url]", "input_reference", "https://example.com/fox.png"},
		{"callback_url", "callback_url", "callback_url", "https://example.com/hook"},
	} {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, kv := range [][2]string{{"model", "kling-v2-1-master"}, {"prompt", "a fox"}, {tc.first, ""}, {tc.second, tc.value}} {
			if tc.param == "prompt" && kv[1] == "a fox" {
				continue // the prompt's own pair is the case
			}
			mw.WriteField(kv[0], kv[1])
		}
		mw.Close()
		r := post(mw.FormDataContentType(), &b)
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != 400 || e == nil || e["param"] != tc.param || !strings.Contains(fmt.Sprint(e["message"]), "more than once") {
			t.Fatalf("a form with %s empty then %s = %q: %d %s; want 400 naming %s", tc.first, tc.second, tc.value, r.status, r.body, tc.param)
		}
	}

	// A body the front cannot read as what its Content-Type says is 400 invalid_request_body
	// saying so: JSON that is not UTF-8 (the task API refuses it; before the fix the front took
	// the prompt as U+FFFD and sent that upstream), a form without a single boundary line
	// (before the fix it read as an empty form: 400 missing_model), and another type (told
	// what is accepted and what was received).
	for _, tc := range []struct{ name, ct, body, message string }{
		{"JSON with a byte that is not UTF-8", "application/json", "{\"model\":\"kling-v2-1-master\",\"prompt\":\"a fox \xff\"}", "UTF-8"},
		{"a form without its boundary", "multipart/form-data; boundary=xyz", "model=kling-v2-1-master&prompt=a+fox", "malformed"},
		{"plain text", "text/plain; charset=utf-8", "a fox", "Content-Type must be application/json or multipart/form-data; got text/plain"},
	} {
		r := post(tc.ct, strings.NewReader(tc.body))
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != 400 || e == nil || e["code"] != "invalid_request_body" || !strings.Contains(fmt.Sprint(e["message"]), tc.message) {
			t.Fatalf("%s = %d %s; want 400 invalid_request_body saying %q", tc.name, r.status, r.body, tc.message)
		}
	}
	if creates := v.kling.log.matching("POST", "/"); len(creates) != 1 {
		t.Fatalf("a refused create reached the provider: %+v", creates)
	}
}

// TestVideosFrontHolds: a create through the front holds the task's estimate against the
// account's balance, as the task API does: with a balance of exactly one estimate (5 s at 0.01),
// a second create is refused with 402 in OpenAI's shape, and once the first video completed its
// hold is settled at the 5 s the provider reported: the ledger has the credit, one hold and one
// settlement, and nothing is held.
func TestVideosFrontHolds(t *testing.T) {
	v := startVideosFront(t)
	req, err := http.NewRequest("POST", v.admin+"/mediagw/accounts/alice/credit", strings.NewReader(`{"amount":"0.05","note":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "credit-1")
	if r := do(t, req); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	r := call(t, "POST", v.base+"/v1/videos", "mg-alice", `{"model":"wan2.2-t2v-plus","prompt":"a paid lighthouse"}`)
	if r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	if b := call(t, "GET", v.admin+"/mediagw/accounts/alice/balance", "", nil); b.field("held") != "0.05" {
		t.Fatalf("balance after the create = %s; want 0.05 held", b.body)
	}
	second := call(t, "POST", v.base+"/v1/videos", "mg-alice", `{"model":"wan2.2-t2v-plus","prompt":"one too many"}`)
	if e, _ := second.json(t)["error"].(map[string]any); second.status != 402 || e == nil || e["type"] != "insufficient_quota" {
		t.Fatalf("a create past the balance = %d %s", second.status, second.body)
	}
	if got := v.finished(t, id); got["status"] != "completed" {
		t.Fatalf("video = %v", got)
	}
	waitFor(t, "the hold settled", func() bool {
		b := call(t, "GET", v.admin+"/mediagw/accounts/alice/balance", "", nil)
		return b.field("held") == "0" && b.field("balance") == "0"
	})
	ledger := call(t, "GET", v.admin+"/mediagw/accounts/alice/ledger", "", nil)
	kinds := map[string]int{}
	for _, e := range ledger.json(t)["entries"].([]any) {
		kinds[e.(map[string]any)["kind"].(string)]++
	}
	if len(kinds) != 3 || kinds["credit"] != 1 || kinds["hold"] != 1 || kinds["settle"] != 1 {
		t.Fatalf("ledger = %s; want a credit, one hold, one settlement", ledger.body)
	}
}
