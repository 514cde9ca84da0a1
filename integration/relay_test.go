package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const relayCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
		}
		key mg-hooks {
			account hooks
		}
		watcher {
			interval 1h
		}
		callbacks {
			allow_private
			relay_base http://127.0.0.1:{{port}}
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_callback_relay /mediagw/callbacks/*
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 300ms
		running_for 300ms
		api_key sim-key
	}
}
`

// TestUpstreamCallbacksAreRelayedAsHints runs with a watcher that never polls in time: the task
// advances only because the upstream's own callbacks reach the relay, which re-reads the task and
// so fires the client's signed callbacks.
func TestUpstreamCallbacksAreRelayedAsHints(t *testing.T) {
	base, _ := startSimGateway(t, relayCaddyfile, nil)
	rc := newReceiver(t, func(int) int { return 200 })
	createWithCallback(t, base, "relayed", rc.URL)
	waitFor(t, "the succeeded callback", func() bool {
		s := rc.seen()
		return len(s) > 0 && s[len(s)-1].status == "succeeded"
	})
	var statuses []string
	for _, d := range rc.seen() {
		statuses = append(statuses, d.status)
	}
	if len(statuses) != 2 || statuses[0] != "running" {
		t.Fatalf("client callbacks = %v, want [running succeeded]", statuses)
	}
	// Unknown tokens and other methods are refused without an API key being asked for.
	if r := call(t, "POST", base+"/mediagw/callbacks/not-a-token", "", "{}"); r.status != 404 {
		t.Fatalf("unknown token = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/mediagw/callbacks/x", "", nil); r.status != 404 {
		t.Fatalf("GET = %d", r.status)
	}
	time.Sleep(100 * time.Millisecond)
}

// TestRelayTokensStayOutOfTheAccessLog: a relay token is the upstream's proof that a callback
// is about that task, so the access log names the relay path with the token redacted.
func TestRelayTokensStayOutOfTheAccessLog(t *testing.T) {
	accessLog := filepath.Join(t.TempDir(), "access.log")
	logged := strings.Replace(relayCaddyfile, "http://127.0.0.1:{{port}} {\n", "http://127.0.0.1:{{port}} {\n\tlog {\n\t\toutput file {{access_log}}\n\t}\n", 1)
	base, _ := startSimGateway(t, logged, map[string]string{"access_log": accessLog})
	rc := newReceiver(t, func(int) int { return 200 })
	createWithCallback(t, base, "relayed", rc.URL)
	waitFor(t, "the succeeded callback", func() bool {
		s := rc.seen()
		return len(s) > 0 && s[len(s)-1].status == "succeeded"
	})
	var uris []string
	waitFor(t, "the relay's access log entries", func() bool {
		uris = uris[:0]
		content, _ := os.ReadFile(accessLog)
		for line := range strings.Lines(string(content)) {
			var entry struct {
				Request struct {
					URI string `json:"uri"`
				} `json:"request"`
				Status int `json:"status"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && strings.HasPrefix(entry.Request.URI, "/mediagw/callbacks/") {
				uris = append(uris, entry.Request.URI)
			}
		}
		return len(uris) >= 2
	})
	for _, uri := range uris {
		if uri != "/mediagw/callbacks/REDACTED" {
			t.Errorf("access log entry of a relayed callback names %s", uri)
		}
	}
}
