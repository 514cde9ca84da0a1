package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestPassThroughRemixIsHeldAtItsSourceVideo: a remix (POST /v1/videos/{id}/remix, passed
// through) makes a video of its source's length and size, and is held, and charged, as one: at
// second 0.10 and second 1080p 0.25, the remix of an 8 s 1280x720 video costs 0.8, of a video
// created without seconds or size (the provider made its default, 4 s at 720x1280, as its answer
// said) 0.4, and of a remix 0.8 again (each held until it is seen completed); the remix of a 4 s 1024x1792 video (1.0) does not fit what
// is left and is a 402 that never reaches the provider; a body naming seconds twice is a 400.
// The client is openai-go's Videos.Remix; the provider, a fake of OpenAI's published videos API,
// remixes only a completed video. (Before, a remix was held and charged as a text request: 0 at
// a per-second price.)
func TestPassThroughRemixIsHeldAtItsSourceVideo(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, upURL := newFakeOpenAIVideos(t, "openai-operator-key")
	upURL = strings.TrimSuffix(upURL, "/v1")
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": upURL, "up_host": strings.TrimPrefix(upURL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "4.2", "remix-1")
	// held is what the videos not yet seen completed hold (each is charged when it completes).
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "filmmakers", want, held) }
	// complete reads a video until the provider says it is completed, as a client waits for it.
	complete := func(id string) {
		t.Helper()
		for range 3 {
			if r := call(t, "GET", base+"/v1/videos/"+id, "mg-pass-video", nil); r.status != 200 {
				t.Fatalf("GET %s = %d %s", id, r.status, r.body)
			}
		}
	}
	create := func(body, wantBalance string) string {
		t.Helper()
		r := call(t, "POST", base+"/v1/videos", "mg-pass-video", body)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create %s = %d %s", body, r.status, r.body)
		}
		complete(r.field("id"))
		balance(wantBalance, "0")
		return r.field("id")
	}
	wide := create(`{"model":"sora-2","prompt":"a lighthouse","seconds":"8","size":"1280x720"}`, "3.4")
	// Held at the contract's 5 s at 720p, charged the 4 s the provider reported it made.
	plain := create(`{"model":"sora-2","prompt":"a harbour"}`, "3")
	tall := create(`{"model":"sora-2","prompt":"a tower","seconds":"4","size":"1024x1792"}`, "2")

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remix := func(source, wantBalance, held string) string {
		t.Helper()
		v, err := client.Videos.Remix(ctx, source, openai.VideoRemixParams{Prompt: "at night"})
		if err != nil || v.ID == "" || v.RemixedFromVideoID != source {
			t.Fatalf("remix of %s = %+v, %v", source, v, err)
		}
		balance(wantBalance, held)
		return v.ID
	}
	// A remix body is read under the create's rule: a length named twice (decoders differ on
	// which counts) is refused before anything is held or sent.
	if r := call(t, "POST", base+"/v1/videos/"+wide+"/remix", "mg-pass-video", `{"prompt":"x","seconds":"4","Seconds":"12"}`); r.status != 400 ||
		!strings.Contains(string(r.body), "seconds") {
		t.Fatalf("a remix body with seconds and Seconds = %d %s, want 400 naming seconds", r.status, r.body)
	}
	night := remix(wide, "1.2", "0.8")
	complete(night)
	balance("1.2", "0") // charged the 8 s at 1280x720 it was held at
	remix(night, "0.4", "0.8")
	remix(plain, "0", "1.2")
	_, err := client.Videos.Remix(ctx, tall, openai.VideoRemixParams{Prompt: "at night"})
	if e, ok := err.(*openai.Error); !ok || e.StatusCode != 402 || e.Code != "insufficient_quota" {
		t.Fatalf("the remix of a 4 s 1080p video (1.0) past a balance of 0 = %v, want 402 insufficient_quota", err)
	}
	balance("0", "1.2")
	if n := len(fake.log.matching("POST", "/v1/videos/")); n != 3 {
		t.Fatalf("the provider saw %d remixes, want 3", n)
	}
}
