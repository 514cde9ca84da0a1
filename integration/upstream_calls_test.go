package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstreamCallsCaddyfile is the layout of docs/configuration.md for the task API and image edits, against a
// fake upstream given as {{up_url}}.
const upstreamCallsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider fake {
			base_url {{up_url}}/api/v3
			api_key fake-upstream-key
			models video-x image-x
			cost 1
		}
		key mg-upcalls-owner {
			id upcalls-owner
			account owner
			quota 10
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			upstream_timeout 30s
		}
		@images path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @images {
			upstream_timeout 30s
		}
		respond 404
	}
}
`

const (
	videoBody = `{"model":"video-x","content":[{"type":"text","text":"a lighthouse"}]}`
	imageBody = `{"model":"image-x","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`
)

func TestUpstreamRedirectsAreNotFollowed(t *testing.T) {
	var stolen atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		fmt.Fprint(w, `{"id":"cgt-elsewhere"}`)
	}))
	defer elsewhere.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	base, _ := startSimGateway(t, upstreamCallsCaddyfile, map[string]string{"up_url": up.URL})

	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-upcalls-owner", videoBody)
	if body := r.json(t); r.status != 502 || body["code"] != "invalid_response" || body["message"] == "" {
		t.Errorf("video create against a redirecting upstream = %d %s, want 502 invalid_response (task shape)", r.status, r.body)
	}
	r = call(t, "POST", base+"/v1/images/edits", "mg-upcalls-owner", imageBody)
	if e, ok := r.json(t)["error"].(map[string]any); r.status != 502 || !ok || e["code"] != "invalid_response" {
		t.Errorf("image edit against a redirecting upstream = %d %s, want 502 invalid_response (OpenAI shape)", r.status, r.body)
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

func TestClientDisconnectDoesNotOrphanTasks(t *testing.T) {
	var creates, edits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/contents/generations/tasks"):
			time.Sleep(1500 * time.Millisecond) // the client gives up before this
			n := creates.Add(1)
			fmt.Fprintf(w, `{"id":"cgt-slow-%d"}`, n)
		case r.Method == "GET" && strings.Contains(r.URL.Path, "/contents/generations/tasks/"):
			id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
			fmt.Fprintf(w, `{"id":%q,"model":"video-x","status":"queued","created_at":1,"updated_at":1,"content":{}}`, id)
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/images/edits"):
			time.Sleep(1500 * time.Millisecond)
			n := edits.Add(1)
			fmt.Fprintf(w, `{"id":"img-slow-%d","status":"queued"}`, n)
		case r.Method == "GET" && strings.Contains(r.URL.Path, "/images/tasks/"):
			fmt.Fprintf(w, `{"id":%q,"status":"running"}`, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	base, g := startSimGateway(t, upstreamCallsCaddyfile, map[string]string{"up_url": up.URL})

	// The client disconnects (its context ends) while the upstream is still creating.
	disconnect := func(path, body string) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg-upcalls-owner")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s answered %d before the upstream did; the test needs a disconnect", path, resp.StatusCode)
		}
	}
	disconnect("/api/v3/contents/generations/tasks", videoBody)
	disconnect("/v1/images/edits", imageBody)

	waitFor(t, "the upstream creates", func() bool { return creates.Load() == 1 && edits.Load() == 1 })
	// The task the client never saw is the owner's: it is listed and can be read.
	waitFor(t, "the video task in the owner's list", func() bool {
		r, err := send("GET", base+"/api/v3/contents/generations/tasks", "mg-upcalls-owner", nil)
		return err == nil && r.status == 200 && strings.Contains(string(r.body), `"cgt-slow-1"`)
	})
	if r := call(t, "GET", base+"/api/v3/contents/generations/tasks/cgt-slow-1", "mg-upcalls-owner", nil); r.status != 200 {
		t.Fatalf("owner reads the task = %d %s", r.status, r.body)
	}
	waitFor(t, "the image task owned", func() bool {
		r, err := send("GET", base+"/v1/images/tasks/img-slow-1", "mg-upcalls-owner", nil)
		return err == nil && r.status == 200
	})
	// Held once each (cost 1), never released: each task stays held until it finishes (the
	// image task's record carries its edit's hold), so nothing is charged yet.
	r := call(t, "GET", "http://"+g.admin+"/mediagw/keys/upcalls-owner/usage", "", nil)
	if u := r.json(t); u["quota_used"] != "0" {
		t.Fatalf("usage after two disconnected creates = %s, want quota_used 0 (both tasks held)", r.body)
	}
	if r := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/owner/balance", "", nil); r.field("balance") != "-2" || r.field("held") != "2" {
		t.Fatalf("balance after two disconnected creates = %s, want -2 with 2 held (both tasks)", r.body)
	}
	if creates.Load() != 1 || edits.Load() != 1 {
		t.Fatalf("upstream creates = %d video, %d image; want one each", creates.Load(), edits.Load())
	}
}
