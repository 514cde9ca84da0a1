package integration

import (
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestHostileUsageIsNotCharged: a provider's report of a video no client can ask for is not
// charged; what it says that a video can be still is. Six 4-second videos: DashScope's
// usage.video_duration says 10^18 seconds (wan-h, 0.01 a second at 720p, 0.04 at 4k: charged its
// estimate, 0.04); DashScope says 5 seconds of 99999999*99999999 pixels (which names 4k: charged
// the 5 seconds at the estimate's 720p, 0.05, not at 4k, 0.20); an
// Ark answer's duration says 100000 seconds (video-h, 1 per million video tokens, 720p 16:9 at
// Ark's published 1248×704 and 24 fps: the estimate's 82,368 tokens, 0.082368); another Ark
// answer says 5 seconds at 10^6 frames per second (the 5 seconds at 24 fps: 102,960 tokens,
// 0.10296); another Ark answer says usage.completion_tokens 10^15 (the estimate's 82,368
// tokens, 0.082368, not 10^9); DashScope says 1e300 seconds (a float past int64, which the
// adaptor no longer converts to a wrapped integer: its estimate, 0.04). Before the fixes the
// first was charged the ledger's bound, 9007199254.740991, the second 0.20, the third 2059.2,
// the fourth 4290 and the fifth 10^9.
func TestHostileUsageIsNotCharged(t *testing.T) {
	up := &scriptedUpstream{answers: map[string]string{}}
	srv := startFake(t, up)
	cfg := strings.Replace(hostileAnswersCaddyfile, "\t\tkey mg-hostile-answers {",
		"\t\tprice wan-h {\n\t\t\tsecond 720p 0.01\n\t\t\tsecond 4k 0.04\n\t\t}\n\t\tprice video-h {\n\t\t\tvideo_tokens 1\n\t\t}\n\t\tkey mg-hostile-answers {", 1)
	if cfg == hostileAnswersCaddyfile {
		t.Fatal("the hostile answers Caddyfile changed shape")
	}
	base, g := startSimGateway(t, cfg, map[string]string{"up_url": srv.URL})
	const key = "mg-hostile-answers"
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()

	for _, tc := range []struct {
		name, model, answer string
		upstreamID          func(videoID string) string
	}{
		{"DashScope 10^18 seconds", "wan-h",
			`{"request_id":"r","output":{"task_id":"%[1]s","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/a.mp4"},"usage":{"video_duration":1e18,"video_ratio":"1280*720"}}`,
			func(string) string { return up.lastDash() }},
		{"DashScope 99999999*99999999 pixels", "wan-h",
			`{"request_id":"r","output":{"task_id":"%[1]s","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/d.mp4"},"usage":{"video_duration":5,"video_ratio":"99999999*99999999"}}`,
			func(string) string { return up.lastDash() }},
		{"Ark 100000 seconds", "video-h",
			`{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":"https://cdn.example.com/b.mp4"},"duration":100000}`,
			func(id string) string { return id }},
		{"Ark 10^6 frames per second", "video-h",
			`{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":"https://cdn.example.com/c.mp4"},"duration":5,"framespersecond":1000000}`,
			func(id string) string { return id }},
		{"Ark 10^15 completion tokens", "video-h",
			`{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":"https://cdn.example.com/e.mp4"},"usage":{"completion_tokens":1000000000000000,"total_tokens":1000000000000000}}`,
			func(id string) string { return id }},
		{"DashScope 1e300 seconds", "wan-h",
			`{"request_id":"r","output":{"task_id":"%[1]s","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/f.mp4"},"usage":{"video_duration":1e300,"video_ratio":"1280*720"}}`,
			func(string) string { return up.lastDash() }},
	} {
		v, err := oa.Videos.New(ctx, openai.VideoNewParams{Model: openai.VideoModel(tc.model), Prompt: "a hostile bill", Seconds: openai.VideoSeconds("4")})
		if err != nil {
			t.Fatalf("%s: create: %v", tc.name, err)
		}
		// The task API's id of an Ark task is the upstream's (the scripted upstream's cgt-h<n>).
		upstreamID := tc.upstreamID(up.lastArk())
		up.set(upstreamID, fmt.Sprintf(tc.answer, upstreamID))
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := oa.Videos.Get(ctx, v.ID)
			if err != nil {
				t.Fatalf("%s: retrieve: %v", tc.name, err)
			}
			if got.Status == openai.VideoStatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %s after 30 s", tc.name, got.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call(t, "GET", "http://"+g.admin+"/mediagw/usage?format=csv&account=hostile-answers&group_by=model&from="+from+"&to="+to, "", nil)
		lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		amounts := map[string]string{}
		for _, l := range lines[min(len(lines), 1):] {
			amounts[l[0]] = l[len(l)-1]
		}
		if err == nil && amounts["wan-h"] == "0.13" && amounts["video-h"] == "0.267696" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage = %d %s; want wan-h charged 0.13 and video-h 0.267696", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastArk is the id of the latest Ark task.
func (s *scriptedUpstream) lastArk() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("cgt-h%d", s.n)
}
