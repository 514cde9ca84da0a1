package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// videoGenerationSizeCaddyfile leaves a video model to a provider of POST /v1/video/generations,
// priced per second with a 1080p band, in the README's proxy form.
const videoGenerationSizeCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider relay {
			base_url {{up_url}}/v1
			api_key relay-operator-key
			models kling-v1
		}
		price kling-v1 {
			second 0.10
			second 1080p 0.25
		}
		key mg-atk-vg {
			account atk-vg
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}
`

// videoRequestProvider serves POST /v1/video/generations and GET /v1/video/generations/{id} with
// the shapes of a published OpenAI-style video generation API (QuantumNous/new-api dto/video.go,
// VideoRequest and VideoTaskResponse): the request names its picture as width and height, and how
// many videos to make as n; the task's answer reports them under metadata.
func videoRequestProvider(t *testing.T, asked *sync.Map) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer relay-operator-key" {
			http.Error(w, "no", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/video/generations":
			var req struct {
				Duration      float64
				Width, Height int
				N             int
			}
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &req)
			asked.Store("req", req)
			fmt.Fprint(w, `{"task_id":"vg_1","status":"queued"}`)
		case r.Method == "GET" && r.URL.Path == "/v1/video/generations/vg_1":
			v, _ := asked.Load("req")
			req := v.(struct {
				Duration      float64
				Width, Height int
				N             int
			})
			fmt.Fprintf(w, `{"task_id":"vg_1","status":"succeeded","url":"https://cdn.example.com/vg_1.mp4","format":"mp4","metadata":{"duration":%v,"fps":30,"width":%d,"height":%d,"seed":1,"n":%d}}`, req.Duration, req.Width, req.Height, req.N)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestVideoGenerationHeldByWidthHeightAndN: a POST /v1/video/generations that asks for its picture as
// width and height (1920x1080) and for n 4 videos was held, and charged, as one 5 s video at the
// 720p default (0.5), when the gateway read seconds, duration, frames, size, resolution, ratio and
// aspect_ratio only. The provider makes four 5 s 1080p videos (4 × 5 × 0.25 = 5). The create must be
// held at what it asks for, or be refused: the gateway refuses n above 1 (400 naming n), and holds
// one video of width × height at that size's band (4 s at 1080p: 1).
func TestVideoGenerationHeldByWidthHeightAndN(t *testing.T) {
	var asked sync.Map
	up := videoRequestProvider(t, &asked)
	base, g := startSimGateway(t, videoGenerationSizeCaddyfile, map[string]string{"up_url": up.URL})
	keysEnv{g: g}.credit(t, "atk-vg", "1", "atk2-vg")
	r := call(t, "POST", base+"/v1/video/generations", "mg-atk-vg",
		`{"model":"kling-v1","prompt":"a lighthouse at dawn","duration":5,"width":1920,"height":1080,"n":4}`)
	if r.status >= 400 && r.status < 500 {
		// Refused (402 for a hold of 5 past a balance of 1, or a 400): nothing unpaid. The
		// gateway holds one video a create, and says so naming n.
		if r.status != 400 || r.json(t)["error"].(map[string]any)["param"] != "n" {
			t.Errorf("n 4: %d %s, want 400 naming n", r.status, r.body)
		}
		if _, ok := asked.Load("req"); ok {
			t.Errorf("refused, but the provider was asked")
		}
		one := call(t, "POST", base+"/v1/video/generations", "mg-atk-vg",
			`{"model":"kling-v1","prompt":"a lighthouse at dawn","duration":4,"width":1920,"height":1080}`)
		held := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/atk-vg/balance", "", nil).field("held")
		if one.status != 200 || held != "1" {
			t.Errorf("one 4 s 1920x1080 video: %d %s, held %s; want 200 and 1 held (4 × 0.25 at 1080p)", one.status, one.body, held)
		}
		return
	}
	admin := "http://" + g.admin + "/mediagw/accounts/atk-vg"
	held := call(t, "GET", admin+"/balance", "", nil).field("held")
	t.Logf("create: %d %s; held %s on a balance of 1", r.status, r.body, held)
	if q := call(t, "GET", base+"/v1/video/generations/vg_1", "mg-atk-vg", nil); q.status == 200 {
		t.Logf("retrieve: %s", q.body)
	}
	var ledger string
	waitFor(t, "the settlement", func() bool {
		ledger = ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), true)
		return strings.Contains(ledger, "settle") || strings.Contains(ledger, "release")
	})
	t.Logf("ledger: %s", ledger)
	if held != "5" {
		t.Errorf("held %s for four 5 s videos at 1080p (5 at second 1080p 0.25); a balance of 1 paid for them", held)
	}
}
