package integration

import (
	"testing"
	"time"
)

// paceCaddyfile puts an upstream serving OpenAI's videos API behind the task API with max_rps
// 5; the watcher polls every task every 200ms and may make 200 calls a second in all.
const paceCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		watcher {
			interval 200ms
			max_rps 200
		}
		provider sora {
			base_url {{openai_url}}
			api_key openai-upstream-key
			protocol openai
			models sora-2
			max_rps 5
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
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestUpstreamMaxRPSAndBackoff: 15 unfinished tasks would be read 75 times a second at the
// watcher's interval; the upstream's max_rps 5 holds the reads to 5 a second (at most 10 in any
// second, 20 in three). After the upstream's 429 with Retry-After: 2, nothing reads it (no
// task of either account, not only the account whose read met the 429) for those 2 seconds;
// then the reads resume.
func TestUpstreamMaxRPSAndBackoff(t *testing.T) {
	f, url := newFakeOpenAIVideos(t, "openai-upstream-key")
	base, _ := startSimGateway(t, paceCaddyfile, map[string]string{"openai_url": url})
	for i := range 15 {
		key := []string{"mg-alice", "mg-bob"}[i%2] // a 429 pauses the upstream, not one account
		r := call(t, "POST", base+"/api/v3/contents/generations/tasks", key,
			map[string]any{"model": "sora-2", "content": []any{map[string]any{"type": "text", "text": "a pond [slow]"}}})
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	time.Sleep(3 * time.Second) // the creates count too: the reads settle at the rate
	from := time.Now()
	time.Sleep(3 * time.Second)
	to := time.Now()
	var at []time.Time
	for _, r := range f.log.matching("GET", "/v1/videos/video_") {
		if !r.At.Before(from) && r.At.Before(to) {
			at = append(at, r.At)
		}
	}
	if len(at) < 10 || len(at) > 20 {
		t.Fatalf("%d reads in 3s at max_rps 5, want 10 to 20", len(at))
	}
	for i := range at {
		n := 0
		for _, b := range at[i:] {
			if b.Sub(at[i]) < time.Second {
				n++
			}
		}
		if n > 10 {
			t.Fatalf("%d reads within a second from %v", n, at[i].Sub(from))
		}
	}

	f.throttleNext.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for f.throttleNext.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.throttleNext.Load() {
		t.Fatal("no read came to meet the 429")
	}
	time.Sleep(4 * time.Second)
	reads := f.log.matching("GET", "/v1/videos/video_")
	var throttled time.Time
	for i := len(reads) - 1; i >= 0; i-- {
		if reads[i].At.Before(deadline.Add(-5 * time.Second)) {
			break
		}
		throttled = reads[i].At // the earliest read since the 429 was armed: the one that met it
	}
	var after []time.Duration
	for _, r := range reads {
		if r.At.After(throttled) {
			after = append(after, r.At.Sub(throttled))
		}
	}
	if len(after) == 0 || after[0] < 1900*time.Millisecond {
		t.Fatalf("reads after the 429: %v", after)
	}
}
