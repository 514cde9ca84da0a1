package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const contentPaceCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider hailuo {
			base_url %s
			api_key minimax-upstream-key
			protocol minimax
			models MiniMax-Hailuo-02
			max_rps 1
		}
		key mg-mallory {
			account mallory
		}
		watcher {
			interval 200ms
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks
		respond 404
	}
}
`

// TestContentKeepsToMaxRPS: a MiniMax upstream with max_rps 1. docs/video-providers.md:
// "max_rps bounds the calls per second that this gateway instance makes to one upstream to read
// its tasks, for every protocol". Mallory's task has succeeded; she then asks for its content 40
// times at once. Each content read reads the task at MiniMax (query/video_generation) and
// resolves its file (files/retrieve) with the operator's key; before the fix none of those calls
// kept to the upstream's pace (80 calls in 38 ms). Now a read takes its share of max_rps: the
// others are answered 429 with a Retry-After, and at least one read streams the video.
func TestContentKeepsToMaxRPS(t *testing.T) {
	t.Parallel()
	mm, mmURL := newFakeMiniMax(t, "minimax-upstream-key")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(contentPaceCaddyfile, t.TempDir(), mmURL, port), base+"/")

	id := createSucceeded(t, base, "mg-mallory", "MiniMax-Hailuo-02")
	time.Sleep(2 * time.Second) // the pace's budget is back to its burst
	before := len(mm.log.matching("GET", "/v1/query/")) + len(mm.log.matching("GET", "/v1/files/retrieve"))
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	streamed := 0
	for range 40 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", base+taskPath+"/"+id+"/content", nil)
			req.Header.Set("Authorization", "Bearer mg-mallory")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusOK && string(body) == string(mm.Video):
				streamed++
			case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" && strings.Contains(string(body), `"code"`):
			default:
				t.Errorf("a content read = %d (Retry-After %q) %.200s; want the video, or 429 with a Retry-After and an error",
					resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		})
	}
	wg.Wait()
	if streamed == 0 {
		t.Fatalf("none of 40 content reads streamed the video")
	}
	elapsed := time.Since(start)
	calls := len(mm.log.matching("GET", "/v1/query/")) + len(mm.log.matching("GET", "/v1/files/retrieve")) - before
	if allowed := 2 + 2*int(elapsed.Seconds()+1); calls > allowed {
		t.Fatalf("40 content requests made %d calls to the MiniMax API with the operator's key in %v; max_rps 1 allows about %d",
			calls, elapsed.Round(time.Millisecond), allowed)
	}
}
