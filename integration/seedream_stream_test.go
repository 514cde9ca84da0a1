package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// seedreamStreamCaddyfile passes image generations through to an Ark upstream ({{up_url}}) whose
// Seedream model is priced 0.03 an image, through the README's pass-through site.
const seedreamStreamCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url {{up_url}}/api/v3
			api_key ark-operator-key
			models seedream-s
		}
		price seedream-s {
			image 0.03
		}
		key mg-seedream-stream {
			account seedream
		}
	}
}

` + readmePassThroughSite

// startSeedreamStream is Ark's Seedream image generation with stream: true, as its reference
// streams it: one image_generation.partial_succeeded event for each image made (its url and
// size; a sequential set, sequential_image_generation auto, makes max_images of them), then
// image_generation.completed with the usage, then [DONE]. A prompt with "[leave]" waits for the
// client to leave after the second image.
func startSeedreamStream(t *testing.T) string {
	return startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model      string `json:"model"`
			Prompt     string `json:"prompt"`
			Sequential string `json:"sequential_image_generation"`
			Options    struct {
				MaxImages int `json:"max_images"`
			} `json:"sequential_image_generation_options"`
			Stream bool `json:"stream"`
		}
		if r.Header.Get("Authorization") != "Bearer ark-operator-key" || r.URL.Path != "/api/v3/images/generations" ||
			json.NewDecoder(r.Body).Decode(&req) != nil || !req.Stream {
			writeFakeJSON(w, 400, map[string]any{"error": map[string]any{"code": "InvalidParameter", "message": "the fake streams only", "type": "BadRequest"}})
			return
		}
		images := 1
		if req.Sequential == "auto" {
			images = req.Options.MaxImages
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(v map[string]any) {
			v["model"], v["created"] = req.Model, 1757396757
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
			w.(http.Flusher).Flush()
		}
		for i := range images {
			event(map[string]any{"type": "image_generation.partial_succeeded", "image_index": i,
				"url": fmt.Sprintf("https://ark-content.example.com/seedream/%d.jpeg", i), "size": "2048x2048"})
			if i == 1 && strings.Contains(req.Prompt, "[leave]") {
				<-r.Context().Done()
				return
			}
		}
		event(map[string]any{"type": "image_generation.completed", "usage": map[string]any{"generated_images": images, "output_tokens": images * 16384, "total_tokens": images * 16384}})
		fmt.Fprint(w, "data: [DONE]\n\n")
	})).URL
}

// TestSeedreamStreamIsChargedEveryImage: a Seedream set streamed through pass-through (the Ark Go
// SDK's GenerateImagesStreaming, sequential_image_generation auto, max_images 4) is held at the
// 4 images it may make, 0.12, and charged each image its partial_succeeded events delivered,
// 4 × 0.03 = 0.12; a stream the client leaves after two images is charged those two, 0.06.
// Before, Ark's events were not read as images: the set was charged its one completed event,
// 0.03, and the stream left after two images was released, its images free; and the set was
// held as one image (n names none), so an account with 0.03 could have 15 made.
func TestSeedreamStreamIsChargedEveryImage(t *testing.T) {
	base, g := startSimGateway(t, seedreamStreamCaddyfile, map[string]string{"up_url": startSeedreamStream(t)})
	keysEnv{g: g, base: base}.credit(t, "seedream", "10", "seedream-stream-1")
	ark := arkruntime.NewClientWithApiKey("mg-seedream-stream", arkruntime.WithBaseUrl(base+"/v1"), arkruntime.WithRetryTimes(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	auto, four := model.SequentialImageGeneration("auto"), 4
	for _, c := range []struct {
		prompt    string
		read      int // the images read before leaving; 0: the whole stream
		held, end string
	}{
		{"a four-season set", 0, "0.12", "settle 0.12"},
		{"a four-season set [leave]", 2, "0.12", "settle 0.06"},
	} {
		from := len(ledgerEntries(t, g, "seedream"))
		streamCtx, leave := context.WithCancel(ctx)
		stream, err := ark.GenerateImagesStreaming(streamCtx, model.GenerateImagesRequest{Model: "seedream-s", Prompt: c.prompt,
			SequentialImageGeneration: &auto, SequentialImageGenerationOptions: &model.SequentialImageGenerationOptions{MaxImages: &four}})
		if err != nil {
			t.Fatalf("%s: %v", c.prompt, err)
		}
		images := 0
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", c.prompt, err)
			}
			if ev.Type == "image_generation.partial_succeeded" && ev.Url != nil {
				images++
			}
			if images == c.read {
				break
			}
		}
		leave()
		stream.Close()
		if c.read == 0 && images != 4 {
			t.Fatalf("%s: %d images streamed", c.prompt, images)
		}
		if held, end := toolEnded(t, g, "seedream", from); held != c.held || end != c.end {
			t.Errorf("%s: held %s, %s; want held %s, %s", c.prompt, held, end, c.held, c.end)
		}
	}
}
