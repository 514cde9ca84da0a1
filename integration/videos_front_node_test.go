package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// videosNodeCaddyfile puts a Seedance model of an Ark upstream (the simulator, whose results are
// at {{media_url}}) behind the OpenAI-style video API.
const videosNodeCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models doubao-seedance-1-0-pro-250528
		}
		key mg-node-videos {
			account node-videos
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_videos /v1/videos* {
			refresh_interval 100ms
		}
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 300ms
		running_for 300ms
		api_key sim-upstream-key
		video_url {{media_url}}/videos/{id}.mp4
	}
}
`

// TestVideosFrontNodeSDK runs integration/node/videos_check.mjs: the Node `openai` package's
// videos.create, retrieve, list and downloadContent against a Seedance model behind the Ark
// simulator, with only the base URL and key changed. The downloaded bytes are the result's, which
// the client fetched from the result's address (the gateway's redirect) without the gateway's key.
func TestVideosFrontNodeSDK(t *testing.T) {
	dir := nodeSDKs(t)
	video := []byte("\x00\x00\x00\x18ftypisom seedance result bytes for the node sdk")
	var mu sync.Mutex
	var fetched []string
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched = append(fetched, r.URL.Path+" authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(video)
	}))
	t.Cleanup(media.Close)
	base, _ := startSimGateway(t, videosNodeCaddyfile, map[string]string{"media_url": media.URL})

	sum := sha256.Sum256(video)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "videos_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY="+base, "KEY=mg-node-videos", "MODEL=doubao-seedance-1-0-pro-250528",
		"VIDEO_SHA256="+hex.EncodeToString(sum[:]), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all ok") {
		t.Fatalf("node videos_check.mjs: %v\n%s", err, out)
	}
	t.Logf("node videos_check.mjs:\n%s", out)
	mu.Lock()
	defer mu.Unlock()
	if len(fetched) != 1 || !strings.HasPrefix(fetched[0], "/videos/") || !strings.HasSuffix(fetched[0], ".mp4 authorization=") {
		t.Fatalf("result fetches %q; want one, without the gateway's key", fetched)
	}
}
