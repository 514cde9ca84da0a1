package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// keyCopiesCaddyfile is Caddyfile.example's route (every gateway endpoint, then the
// pass-through) with the site's access log on, to a file: the simulator serves the task API,
// the video front, image edits; the recorder serves chat, and shows what a provider receives.
const keyCopiesCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
		}
		provider sim-openai {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-key
			models sim-image
		}
		provider rec {
			base_url {{rec_url}}/v1
			api_key rec-operator-key
			models rec-chat
		}
		key mg-copied-key-6b1d {
			account copiers
		}
		upload {
			bucket media
			endpoint http://127.0.0.1:1
			path_style
			access_key_id test
			secret_access_key test-secret
		}
	}
}

http://127.0.0.1:{{port}} {
	log {
		output file {{access_log}}
	}
	route {
		mediagw_auth
		mediagw_models
		mediagw_presign
		mediagw_video_tasks
		mediagw_videos
		mediagw_image_edits
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-key
	}
}
`

// keyCopyPlaces are the places besides Authorization where clients configured for other
// gateways send their key again (Azure API Management, Portkey, generic token gateways), a
// header the gateway has no reason to know (Via), and a percent-encoded copy.
var keyCopyPlaces = []struct{ name, query, header string }{
	{"Ocp-Apim-Subscription-Key header", "", "Ocp-Apim-Subscription-Key"},
	{"X-Portkey-Api-Key header", "", "X-Portkey-Api-Key"},
	{"Token header", "", "Token"},
	{"X-Access-Token header", "", "X-Access-Token"},
	{"Via header", "", "Via"},
	{"?token= query", "token=%s", ""},
	{"?auth= query", "auth=%s", ""},
	{"?subscription-key= query", "subscription-key=%s", ""},
	{"?token= percent-encoded", "token=%%6D%%67%%2D%s", ""},
}

// sendKeyCopy sends method path (with body, JSON) authenticated by Authorization: Bearer key,
// with the key again in place.
func sendKeyCopy(t *testing.T, base, method, path, body, key string, place int) response {
	t.Helper()
	p := keyCopyPlaces[place]
	target := base + path
	if p.query != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		if strings.Contains(p.query, "%%") {
			target += sep + fmt.Sprintf(p.query, strings.TrimPrefix(key, "mg-"))
		} else {
			target += sep + fmt.Sprintf(p.query, url.QueryEscape(key))
		}
	}
	var req *http.Request
	if body == "" {
		req, _ = http.NewRequest(method, target, nil)
	} else {
		req, _ = http.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if p.header != "" {
		req.Header.Set(p.header, key)
	}
	return do(t, req)
}

// TestKeyCopiesNeverReachUpstreamsOrLogs: a client that authenticates with Authorization: Bearer
// and sends the same key again under a name the gateway does not list (a header or a query
// parameter) has that copy removed before anything forwards or logs it: the provider gets
// neither, nor does Caddy's access log print it, on the pass-through and on every endpoint of the
// gateway's own (task API, /v1/videos, image edits, presign, models). The request is served. The
// entry of a request refused for its key (401) leaves its copies out too.
func TestKeyCopiesNeverReachUpstreamsOrLogs(t *testing.T) {
	rec := newRecorder(t)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	base, _ := startSimGateway(t, keyCopiesCaddyfile, map[string]string{"rec_url": rec.URL, "access_log": accessLog})
	const key = "mg-copied-key-6b1d"
	endpoints := []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", `{"model":"rec-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`},
		{"POST", "/api/v3/contents/generations/tasks", `{"model":"sim-video","content":[{"type":"text","text":"a lighthouse"}]}`},
		{"GET", "/api/v3/contents/generations/tasks?page_size=2", ""},
		{"POST", "/v1/videos", `{"model":"sim-video","prompt":"a lighthouse"}`},
		{"GET", "/v1/videos", ""},
		{"POST", "/v1/images/edits", imageEditBody("sim-image", 1, "1024x1024", "low")},
		{"POST", "/v1/upload/presign", `{"filename":"a.png","content_type":"image/png"}`},
		{"GET", "/v1/models", ""},
	}
	sent := 0
	for _, ep := range endpoints {
		for i, place := range keyCopyPlaces {
			t.Run(ep.method+" "+ep.path+" "+place.name, func(t *testing.T) {
				rec.mu.Lock()
				before := len(rec.requests)
				rec.mu.Unlock()
				r := sendKeyCopy(t, base, ep.method, ep.path, ep.body, key, i)
				sent++
				if r.status >= 300 {
					t.Errorf("status %d %s: a copy of the key is removed, not refused", r.status, r.body)
				}
				rec.mu.Lock()
				got := append([]recorded(nil), rec.requests[before:]...)
				rec.mu.Unlock()
				if ep.path == "/v1/chat/completions" && len(got) == 0 {
					t.Fatalf("nothing forwarded")
				}
				for _, g := range got {
					if strings.Contains(g.query, strings.TrimPrefix(key, "mg-")) {
						t.Errorf("the provider got the client's key in its query: %q", g.query)
					}
					for name, values := range g.header {
						if strings.Contains(strings.Join(values, ","), strings.TrimPrefix(key, "mg-")) {
							t.Errorf("the provider got the client's key in %s: %v", name, values)
						}
					}
					if g.header.Get("Authorization") != "Bearer rec-operator-key" {
						t.Errorf("the provider got Authorization %q", g.header.Get("Authorization"))
					}
				}
			})
		}
	}
	// A refused request is logged too: an unknown key's copies are left out of its entry alike.
	const unknown = "mg-copied-unknown-93fa"
	for i := range keyCopyPlaces {
		r := sendKeyCopy(t, base, "POST", "/v1/chat/completions", endpoints[0].body, unknown, i)
		sent++
		if r.status != http.StatusUnauthorized {
			t.Errorf("unknown key, copy in %s: %d %s, want 401", keyCopyPlaces[i].name, r.status, r.body)
		}
	}
	client.CloseIdleConnections()
	access := awaitAccessEntries(t, accessLog, sent)
	for _, line := range strings.Split(string(access), "\n") {
		for _, k := range []string{key, unknown} {
			if strings.Contains(line, strings.TrimPrefix(k, "mg-")) {
				t.Errorf("the access log holds the client's key: %s", line)
			}
		}
	}
	if !strings.Contains(string(access), `"uri":"/api/v3/contents/generations/tasks?page_size=2"`) {
		t.Errorf("the access log lacks the query's other pairs:\n%s", access)
	}
}
