package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// videoProvidersCaddyfile puts a DashScope (Wan), a Gemini (Veo), a Kling, an OpenAI-style (Sora)
// and a MiniMax (Hailuo) provider, each a strict fake, behind the task API; the watcher polls
// every 200ms.
const videoProvidersCaddyfile = `{
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
			models wan2.2-t2v-plus wan2.5-t2v-preview wan2.2-kf2v-flash
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
		provider sora {
			base_url {{openai_url}}
			api_key openai-upstream-key
			protocol openai
			models sora-2 sora-2-pro
		}
		provider hailuo {
			base_url {{minimax_url}}
			api_key minimax-upstream-key
			protocol minimax
			models MiniMax-Hailuo-02
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
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}
`

// videoProviders runs a gateway in front of the five fakes.
type videoProviders struct {
	base   string
	admin  string // the gateway's admin address (host:port)
	dash   *fakeDashScope
	gemini *fakeGemini
	kling  *fakeKling
	mini   *fakeMiniMax
	openai *fakeOpenAIVideos
	alice  *arkruntime.Client
	bob    *arkruntime.Client
}

func startVideoProviders(t *testing.T) videoProviders {
	t.Helper()
	return startVideoProvidersWith(t, videoProvidersCaddyfile)
}

// startVideoProvidersWith is startVideoProviders with a Caddyfile of videoProvidersCaddyfile's
// placeholders (a test's variant of it).
func startVideoProvidersWith(t *testing.T, caddyfile string) videoProviders {
	t.Helper()
	dash, dashURL := newFakeDashScope(t, "dash-upstream-key")
	gem, gemURL := newFakeGemini(t, "gemini-upstream-key")
	kling, klingURL := newFakeKling(t, "kling-access-key", "kling-secret-key")
	mini, miniURL := newFakeMiniMax(t, "minimax-upstream-key")
	oai, oaiURL := newFakeOpenAIVideos(t, "openai-upstream-key")
	base, g := startSimGateway(t, caddyfile, map[string]string{"dash_url": dashURL, "gemini_url": gemURL,
		"kling_url": klingURL, "minimax_url": miniURL, "openai_url": oaiURL})
	return videoProviders{base: base, admin: g.admin, dash: dash, gemini: gem, kling: kling, mini: mini, openai: oai,
		alice: arkClient(base, "mg-alice"), bob: arkClient(base, "mg-bob")}
}

// reads are the task reads (GETs under prefix) that the fakes received, each fake's in order.
func (v videoProviders) reads(prefix string) []received {
	all := append(v.dash.log.matching("GET", prefix), v.gemini.log.matching("GET", prefix)...)
	all = append(all, v.kling.log.matching("GET", prefix)...)
	all = append(all, v.mini.log.matching("GET", prefix)...)
	return append(all, v.openai.log.matching("GET", prefix)...)
}

// createWith creates a task with the raw contract body (the SDK's request type has no options)
// and returns its id.
func (v videoProviders) createWith(t *testing.T, body map[string]any) string {
	t.Helper()
	r := call(t, "POST", v.base+"/api/v3/contents/generations/tasks", "mg-alice", body)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.field("id")
}

// sdkTask creates a text task with the Ark SDK and polls it to its end.
func (v videoProviders) sdkTask(t *testing.T, modelID, prompt string) model.GetContentGenerationTaskResponse {
	t.Helper()
	req := textTask(prompt)
	req.Model = modelID
	created, err := v.alice.CreateContentGenerationTask(context.Background(), req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(created.ID, "cgt-") {
		t.Fatalf("task id %q is not the gateway's", created.ID)
	}
	return pollUntil(t, v.alice, created.ID)
}

// TestVideoProvidersLifecycle drives a task of each protocol through the Ark SDK: success,
// the provider's failure, and ownership (another account gets the unknown-id answer).
func TestVideoProvidersLifecycle(t *testing.T) {
	v := startVideoProviders(t)
	for _, p := range []struct{ name, model string }{{"dashscope", "wan2.2-t2v-plus"}, {"gemini", "veo-client"}, {"kling", "kling-v2-1-master"}, {"minimax", "MiniMax-Hailuo-02"}, {"openai", "sora-2"}} {
		t.Run(p.name+"/success", func(t *testing.T) {
			got := v.sdkTask(t, p.model, "a lighthouse at dawn")
			if got.Status != model.StatusSucceeded || got.Content.VideoURL == "" || got.Model != p.model {
				t.Fatalf("answer: %+v", got)
			}
			_, err := v.bob.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: got.ID})
			_, errUnknown := v.bob.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: "cgt-000000000000000000000000"})
			if err == nil || httpStatus(err) != httpStatus(errUnknown) || httpStatus(err) == 0 {
				t.Fatalf("another account's read: %v (%d); an unknown id's: %v (%d)", err, httpStatus(err), errUnknown, httpStatus(errUnknown))
			}
		})
		t.Run(p.name+"/failure", func(t *testing.T) {
			got := v.sdkTask(t, p.model, "a storm [fail]")
			if got.Status != model.StatusFailed || got.Error == nil || got.Error.Code == "" || got.Error.Message == "" {
				t.Fatalf("answer: %+v (error %+v)", got, got.Error)
			}
			want := map[string]string{"dashscope": "DataInspectionFailed", "gemini": "invalid_argument", "kling": "generation_failed", "minimax": "generation_failed", "openai": "moderation_blocked"}[p.name]
			if got.Error.Code != want {
				t.Fatalf("error.code = %q, want the provider's %q", got.Error.Code, want)
			}
		})
	}
	if got := v.dash.log.matching("POST", "/api/v1/services/"); len(got) == 0 || got[0].Header.Get("X-Dashscope-Async") != "enable" {
		t.Fatalf("dashscope creates: %+v", got)
	}
	// A task that names neither resolution nor ratio is made at the contract's defaults (spec
	// §2.2: 720p, 16:9), not at the API's default size, which is portrait (720x1280).
	creates := v.openai.log.matching("POST", "/v1/videos")
	if len(creates) == 0 {
		t.Fatal("no openai create reached the provider")
	}
	if !bytes.Contains(creates[0].Body, []byte(`"size":"1280x720"`)) {
		t.Fatalf("the first openai create sent %s; want size 1280x720", creates[0].Body)
	}
}

// TestVideoProvidersUnknownState: a state the provider documents as unknown (DashScope's
// UNKNOWN; a Veo operation done with neither response nor error) keeps the task running, read
// again and again, never failed or stuck with an error.
func TestVideoProvidersUnknownState(t *testing.T) {
	v := startVideoProviders(t)
	for _, p := range []struct{ model, readPrefix string }{{"wan2.2-t2v-plus", "/api/v1/tasks/"}, {"veo-client", "/v1beta/models/"},
		{"kling-v2-1-master", "/v1/videos/"}, {"MiniMax-Hailuo-02", "/v1/query/"}, {"sora-2", "/v1/videos/video_"}} {
		req := textTask("a mirror [unknown]")
		req.Model = p.model
		created, err := v.alice.CreateContentGenerationTask(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		reads := func() int {
			return len(v.reads(p.readPrefix))
		}
		deadline := time.Now().Add(30 * time.Second)
		for reads() < 5 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		got, err := v.alice.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: created.ID})
		if err != nil || got.Status != model.StatusRunning || got.Error != nil || reads() < 5 {
			t.Fatalf("%s after %d reads: %+v, %v", p.model, reads(), got, err)
		}
	}
}

// TestVideoProvidersThrottledRead: the provider answers the first read of a task with 429 and
// Retry-After: 2. Nothing reads the task again (neither the watcher, every 200ms, nor the
// client's polls, which get the stored answer) until the 2 seconds passed; then it finishes.
// MiniMax says "rate limit" in a 200 answer (status_code 1002) without Retry-After: the upstream
// cools down for the least cooldown, a second.
func TestVideoProvidersThrottledRead(t *testing.T) {
	v := startVideoProviders(t)
	for _, p := range []struct {
		model, readPrefix string
		minGap            time.Duration
	}{{"wan2.2-t2v-plus", "/api/v1/tasks/", 1900 * time.Millisecond}, {"veo-client", "/v1beta/models/", 1900 * time.Millisecond},
		{"kling-v2-1-master", "/v1/videos/", 1900 * time.Millisecond}, {"MiniMax-Hailuo-02", "/v1/query/", 900 * time.Millisecond},
		{"sora-2", "/v1/videos/video_", 1900 * time.Millisecond}} {
		got := v.sdkTask(t, p.model, "a quiet street [throttle]")
		if got.Status != model.StatusSucceeded {
			t.Fatalf("%s: %+v", p.model, got)
		}
		reads := v.reads(p.readPrefix)
		if len(reads) < 2 {
			t.Fatalf("%s: %d reads", p.model, len(reads))
		}
		if gap := reads[1].At.Sub(reads[0].At); gap < p.minGap {
			t.Fatalf("%s: read again %v after the provider's rate limit", p.model, gap)
		}
	}
}

// TestDashScopeMapping checks what reaches DashScope for the contract's fields: text-to-video
// with size from resolution × ratio, duration, seed, watermark, audio and a negative prompt from
// tools; fields DashScope lacks (camera_fixed, frames) are accepted and not sent; a first and a
// last frame make a key-frame task on the image2video endpoint. The actual duration, resolution
// and ratio come from the provider's usage.
func TestDashScopeMapping(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{
		"model": "wan2.5-t2v-preview", "resolution": "720p", "ratio": "9:16", "duration": 5, "seed": 42,
		"watermark": false, "generate_audio": true, "camera_fixed": true, "service_tier": "default",
		"content": []any{map[string]any{"type": "text", "text": "a heron"}},
		"tools":   []any{map[string]any{"type": "negative_prompt", "text": "blur"}},
	})
	creates := v.dash.log.matching("POST", "/api/v1/services/aigc/video-generation/")
	if len(creates) != 1 {
		t.Fatalf("creates: %d", len(creates))
	}
	var sent map[string]any
	decodeJSON(t, creates[0].Body, &sent)
	want := `{"input":{"negative_prompt":"blur","prompt":"a heron"},"model":"wan2.5-t2v-preview","parameters":{"audio":true,"duration":5,"seed":42,"size":"720*1280","watermark":false}}`
	if b, _ := json.Marshal(sent); string(b) != want {
		t.Fatalf("sent %s\nwant %s", b, want)
	}
	got := pollUntil(t, v.alice, id)
	r := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	answer := r.json(t)
	if got.Status != model.StatusSucceeded || answer["resolution"] != "720p" || answer["ratio"] != "9:16" || answer["duration"] != 5.0 {
		t.Fatalf("answer: %s", r.body)
	}

	v.createWith(t, map[string]any{
		"model": "wan2.2-kf2v-flash", "resolution": "1080p",
		"content": []any{
			map[string]any{"type": "text", "text": "a door opens"},
			map[string]any{"type": "image_url", "role": "first_frame", "image_url": map[string]any{"url": "https://img.example/a.png"}},
			map[string]any{"type": "image_url", "role": "last_frame", "image_url": map[string]any{"url": "https://img.example/b.png"}},
		},
	})
	frames := v.dash.log.matching("POST", "/api/v1/services/aigc/image2video/")
	if len(frames) != 1 || !bytes.Contains(frames[0].Body, []byte(`"first_frame_url":"https://img.example/a.png","last_frame_url":"https://img.example/b.png"`)) ||
		!bytes.Contains(frames[0].Body, []byte(`"resolution":"1080P"`)) {
		t.Fatalf("key-frame creates: %+v", frames)
	}
}

// TestGeminiCredentialedResult: a Veo task's result is a file URI that needs the operator's key.
// The client never sees it: content.video_url is the task's owner-only content endpoint, which
// streams the file (the key sent to the provider only, not across the storage redirect).
// Another account gets the unknown-id answer there too. Mapping: ratio, resolution, duration
// and a negative prompt reach parameters; the client's model id is mapped.
func TestGeminiCredentialedResult(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{
		"model": "veo-client", "ratio": "9:16", "resolution": "1080p", "duration": 8, "seed": 7,
		"content": []any{map[string]any{"type": "text", "text": "a paper boat"}},
		"tools":   []any{map[string]any{"type": "negative_prompt", "text": "people"}},
	})
	creates := v.gemini.log.matching("POST", "/v1beta/models/veo-3.0-generate-001:predictLongRunning")
	if len(creates) != 1 || creates[0].Header.Get("X-Goog-Api-Key") != "gemini-upstream-key" || creates[0].Header.Get("Authorization") != "" {
		t.Fatalf("creates: %+v", creates)
	}
	want := `{"instances":[{"prompt":"a paper boat"}],"parameters":{"aspectRatio":"9:16","durationSeconds":8,"negativePrompt":"people","resolution":"1080p"}}`
	if got := strings.TrimSpace(string(creates[0].Body)); got != want {
		t.Fatalf("sent %s\nwant %s", got, want)
	}
	got := pollUntil(t, v.alice, id)
	wantURL := "/api/v3/contents/generations/tasks/" + id + "/content"
	if got.Status != model.StatusSucceeded || got.Content.VideoURL != wantURL {
		t.Fatalf("answer: %+v", got)
	}
	raw := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if bytes.Contains(raw.body, []byte("files/")) || bytes.Contains(raw.body, []byte("gemini-upstream-key")) {
		t.Fatalf("the answer shows the provider's file: %s", raw.body)
	}
	video := call(t, "GET", v.base+got.Content.VideoURL, "mg-alice", nil)
	if video.status != 200 || !bytes.Equal(video.body, v.gemini.Video) || video.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("content: %d %q %s", video.status, video.header.Get("Content-Type"), video.body)
	}
	if stored := v.gemini.log.matching("GET", "/storage/"); len(stored) != 1 || stored[0].Header.Get("X-Goog-Api-Key") != "" {
		t.Fatalf("storage requests: %+v", stored)
	}
	other := call(t, "GET", v.base+got.Content.VideoURL, "mg-bob", nil)
	unknown := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/cgt-000000000000000000000000/content", "mg-bob", nil)
	if other.status != unknown.status || other.field("code") != unknown.field("code") || other.field("message") != unknown.field("message") || other.status == 200 {
		t.Fatalf("another account: %d %s; unknown id: %d %s", other.status, other.body, unknown.status, unknown.body)
	}
}

// TestKlingMapping checks what reaches Kling: a JWT the fake verifies on every request (never an
// API key), a first and a last frame as an image-to-video task (image, image_tail), resolution
// 1080p as mode pro, duration 10 as the string "10"; aspect_ratio is not an image-to-video field
// and is not sent. The task is then read at its kind's path and finishes with the reported
// duration (5.1 s is 5).
func TestKlingMapping(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{
		"model": "kling-v2-1-master", "resolution": "1080p", "ratio": "16:9", "duration": 10, "seed": 3, "camera_fixed": true,
		"content": []any{
			map[string]any{"type": "text", "text": "a kite"},
			map[string]any{"type": "image_url", "role": "first_frame", "image_url": map[string]any{"url": "https://img.example/a.png"}},
			map[string]any{"type": "image_url", "role": "last_frame", "image_url": map[string]any{"url": "https://img.example/b.png"}},
		},
		"tools": []any{map[string]any{"type": "negative_prompt", "text": "fog"}},
	})
	creates := v.kling.log.matching("POST", "/v1/videos/image2video")
	want := `{"model_name":"kling-v2-1-master","prompt":"a kite","negative_prompt":"fog","image":"https://img.example/a.png","image_tail":"https://img.example/b.png","mode":"pro","duration":"10"}`
	if len(creates) != 1 || string(creates[0].Body) != want {
		t.Fatalf("creates %+v\nwant %s", creates, want)
	}
	got := pollUntil(t, v.alice, id)
	r := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if got.Status != model.StatusSucceeded || r.json(t)["duration"] != 5.0 || !strings.HasPrefix(got.Content.VideoURL, "https://kling-result.example/") {
		t.Fatalf("answer %s", r.body)
	}
	for _, req := range v.kling.log.matching("GET", "/v1/videos/") {
		if !strings.HasPrefix(req.Path, "/v1/videos/image2video/") {
			t.Fatalf("read at %s", req.Path)
		}
	}
}

// TestVideoProvidersCancel: a queued DashScope task is cancelled upstream and reads cancelled once
// the provider confirms it; an unfinished Veo task cannot be cancelled (409) and runs on; a
// finished task is forgotten, then answers as an unknown id.
func TestVideoProvidersCancel(t *testing.T) {
	v := startVideoProviders(t)
	tasks := v.base + "/api/v3/contents/generations/tasks/"
	queued := v.createWith(t, map[string]any{"model": "wan2.2-t2v-plus", "content": []any{map[string]any{"type": "text", "text": "a pond [slow]"}}})
	if r := call(t, "DELETE", tasks+queued, "mg-alice", nil); r.status != 200 || string(bytes.TrimSpace(r.body)) != "{}" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if got := call(t, "GET", tasks+queued, "mg-alice", nil).field("status"); got != "cancelled" || len(v.dash.log.matching("POST", "/api/v1/tasks/")) != 1 {
		t.Fatalf("after the cancel: %q, %d cancels upstream", got, len(v.dash.log.matching("POST", "/api/v1/tasks/")))
	}

	running := v.createWith(t, map[string]any{"model": "veo-client", "content": []any{map[string]any{"type": "text", "text": "a pond [slow]"}}})
	if r := call(t, "DELETE", tasks+running, "mg-alice", nil); r.status != 409 || r.field("code") != "cancel_not_supported" {
		t.Fatalf("cancel of a Veo task: %d %s", r.status, r.body)
	}
	if got := call(t, "GET", tasks+running, "mg-alice", nil).field("status"); got != "running" {
		t.Fatalf("after the refused cancel: %q", got)
	}

	done := v.sdkTask(t, "kling-v2-1-master", "a pond")
	if r := call(t, "DELETE", tasks+done.ID, "mg-bob", nil); r.status != 400 || r.field("code") != "task_not_exist" {
		t.Fatalf("another account's delete: %d %s", r.status, r.body)
	}
	if r := call(t, "DELETE", tasks+done.ID, "mg-alice", nil); r.status != 200 {
		t.Fatalf("delete of a finished task: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", tasks+done.ID, "mg-alice", nil); r.status != 400 || r.field("code") != "task_not_exist" {
		t.Fatalf("after the delete: %d %s", r.status, r.body)
	}
}

// TestMiniMaxFileResult: a MiniMax task's result is a file id that only the operator's key
// resolves. The client gets the owner-only content endpoint, which resolves the id and streams
// the file from its signed download address (without the key); neither the id nor the address
// is shown. Mapping: first and last frame, duration 6, resolution 1080p as 1080P; the reported
// size gives resolution and ratio.
func TestMiniMaxFileResult(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{
		"model": "MiniMax-Hailuo-02", "resolution": "1080p", "duration": 6, "ratio": "9:16", "seed": 9,
		"content": []any{
			map[string]any{"type": "text", "text": "a swing"},
			map[string]any{"type": "image_url", "role": "first_frame", "image_url": map[string]any{"url": "https://img.example/a.png"}},
			map[string]any{"type": "image_url", "role": "last_frame", "image_url": map[string]any{"url": "https://img.example/b.png"}},
		},
	})
	creates := v.mini.log.matching("POST", "/v1/video_generation")
	want := `{"model":"MiniMax-Hailuo-02","prompt":"a swing","first_frame_image":"https://img.example/a.png","last_frame_image":"https://img.example/b.png","duration":6,"resolution":"1080P"}`
	if len(creates) != 1 || string(creates[0].Body) != want || creates[0].Header.Get("Authorization") != "Bearer minimax-upstream-key" {
		t.Fatalf("creates %+v\nwant %s", creates, want)
	}
	got := pollUntil(t, v.alice, id)
	if got.Status != model.StatusSucceeded || got.Content.VideoURL != "/api/v3/contents/generations/tasks/"+id+"/content" {
		t.Fatalf("answer %+v", got)
	}
	raw := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if bytes.Contains(raw.body, []byte("file-")) || bytes.Contains(raw.body, []byte("/cdn/")) || raw.json(t)["resolution"] != "1080p" || raw.json(t)["ratio"] != "16:9" {
		t.Fatalf("answer %s", raw.body)
	}
	video := call(t, "GET", v.base+got.Content.VideoURL, "mg-alice", nil)
	if video.status != 200 || !bytes.Equal(video.body, v.mini.Video) {
		t.Fatalf("content: %d %s", video.status, video.body)
	}
	if cdn := v.mini.log.matching("GET", "/cdn/"); len(cdn) != 1 {
		t.Fatalf("download requests %+v", cdn)
	}
	if r := call(t, "GET", v.base+got.Content.VideoURL, "mg-bob", nil); r.status != 400 || r.field("code") != "task_not_exist" {
		t.Fatalf("another account: %d %s", r.status, r.body)
	}
}

// TestGeminiLengthTheModelMakes: the strict fake Gemini API takes only the lengths a Veo model
// makes (4, 6 or 8 s for Veo 3), so a task of the contract's default 5 s, or of 15 s, is sent
// as the nearest of them (6 and 8) and made, not refused by the provider.
func TestGeminiLengthTheModelMakes(t *testing.T) {
	v := startVideoProviders(t)
	for duration, want := range map[int]string{5: `"durationSeconds":6`, 15: `"durationSeconds":8`} {
		before := len(v.gemini.log.matching("POST", "/v1beta/models/veo-3.0-generate-001:predictLongRunning"))
		id := v.createWith(t, map[string]any{"model": "veo-client", "duration": duration,
			"content": []any{map[string]any{"type": "text", "text": "a kite"}}})
		creates := v.gemini.log.matching("POST", "/v1beta/models/veo-3.0-generate-001:predictLongRunning")
		if len(creates) != before+1 || !bytes.Contains(creates[len(creates)-1].Body, []byte(want)) {
			t.Fatalf("duration %d: sent %s, want %s", duration, creates[len(creates)-1].Body, want)
		}
		if got := pollUntil(t, v.alice, id); got.Status != model.StatusSucceeded {
			t.Fatalf("duration %d: %+v", duration, got)
		}
	}
}

// TestMiniMaxLengthAt1080P: Hailuo makes 10 s videos at 768P but only 6 s at 1080P, and the
// strict fake refuses 10 there as MiniMax does; a task asking for 10 s at 1080p is sent 6 s and
// made, not refused, and one at 720p is sent its 10 s.
func TestMiniMaxLengthAt1080P(t *testing.T) {
	v := startVideoProviders(t)
	for _, c := range []struct{ resolution, want string }{{"1080p", `"duration":6,"resolution":"1080P"`}, {"720p", `"duration":10,"resolution":"768P"`}} {
		id := v.createWith(t, map[string]any{"model": "MiniMax-Hailuo-02", "resolution": c.resolution, "duration": 10,
			"content": []any{map[string]any{"type": "text", "text": "a tide"}}})
		creates := v.mini.log.matching("POST", "/v1/video_generation")
		if len(creates) == 0 || !bytes.Contains(creates[len(creates)-1].Body, []byte(c.want)) {
			t.Fatalf("%s: sent %s, want %s", c.resolution, creates[len(creates)-1].Body, c.want)
		}
		if got := pollUntil(t, v.alice, id); got.Status != model.StatusSucceeded {
			t.Fatalf("%s: %+v", c.resolution, got)
		}
	}
}

// TestKlingLengthNearest: Kling makes 5 or 10 s videos; a task asking for 8 s is sent the nearer
// 10 (before, no length was sent and Kling made its default 5), one asking for 7 s is sent 5.
func TestKlingLengthNearest(t *testing.T) {
	v := startVideoProviders(t)
	for duration, want := range map[int]string{8: `"duration":"10"`, 7: `"duration":"5"`} {
		before := len(v.kling.log.matching("POST", "/v1/videos/text2video"))
		id := v.createWith(t, map[string]any{"model": "kling-v2-1-master", "duration": duration,
			"content": []any{map[string]any{"type": "text", "text": "a lantern"}}})
		creates := v.kling.log.matching("POST", "/v1/videos/text2video")
		if len(creates) != before+1 || !bytes.Contains(creates[len(creates)-1].Body, []byte(want)) {
			t.Fatalf("duration %d: creates %+v, want %s", duration, creates, want)
		}
		if got := pollUntil(t, v.alice, id); got.Status != model.StatusSucceeded {
			t.Fatalf("duration %d: %+v", duration, got)
		}
	}
}
