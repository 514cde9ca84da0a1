package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

const foldedCreatesCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider sora {
			base_url %s
			api_key openai-upstream-key
			protocol openai
			models sora-2
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
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

// TestVideoAdaptedFoldedCreateRefused: an OpenAI-style upstream (another gateway serving
// /v1/videos, with a cache that folds identical creates) answers bob's create with the video id
// it gave alice's identical create a moment before. As for an Ark upstream, the create answered
// with an upstream id already recorded fails and alice's task is left alone, so no gateway task
// of bob's follows alice's video: were one to, bob's DELETE of his finished task would delete the
// video upstream (the openai adaptor deletes a finished video) and alice's content endpoint,
// which streams from the provider, would no longer have it.
func TestVideoAdaptedFoldedCreateRefused(t *testing.T) {
	t.Parallel()
	oai, _ := newFakeOpenAIVideos(t, "openai-upstream-key")
	var mu sync.Mutex
	folded := map[string][]byte{} // create body -> the answer given to it
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/videos" {
			oai.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if answer, ok := folded[string(body)]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		oai.ServeHTTP(rec, r)
		if rec.Code == 200 {
			folded[string(body)] = rec.Body.Bytes()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(up.Close)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(foldedCreatesCaddyfile, t.TempDir(), up.URL+"/v1", port), base+"/")

	create := func(key string) response {
		return call(t, "POST", base+taskPath, key, map[string]any{"model": "sora-2",
			"content": []any{map[string]any{"type": "text", "text": "a lighthouse at dawn"}}})
	}
	r := create("mg-alice")
	alice := r.field("id")
	if r.status != 200 || alice == "" {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	r = create("mg-bob")
	bob := r.field("id")
	if creates := len(oai.log.matching("POST", "/v1/videos")); creates != 1 {
		t.Fatalf("the provider made %d videos; the test wants one, shared by the folded creates", creates)
	}
	if r.status != 200 {
		// Refused, as an Ark create answered with a recorded id is: alice's task is left alone.
		bob = ""
	}
	for _, who := range []struct{ key, id string }{{"mg-alice", alice}, {"mg-bob", bob}} {
		if who.id == "" {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for call(t, "GET", base+taskPath+"/"+who.id, who.key, nil).field("status") != "succeeded" {
			if time.Now().After(deadline) {
				t.Fatalf("%s's task did not succeed", who.key)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if r := call(t, "GET", base+taskPath+"/"+alice+"/content", "mg-alice", nil); r.status != 200 {
		t.Fatalf("alice's content before bob's delete = %d %s", r.status, r.body)
	}
	if bob != "" {
		if r := call(t, "DELETE", base+taskPath+"/"+bob, "mg-bob", nil); r.status != 200 {
			t.Fatalf("bob's delete = %d %s", r.status, r.body)
		}
	}
	if r := call(t, "GET", base+taskPath+"/"+alice+"/content", "mg-alice", nil); r.status != 200 {
		t.Fatalf("alice's content after bob deleted HIS task = %d %.200s: bob's task was alice's upstream video "+
			"(%d DELETE calls reached the provider)", r.status, r.body, len(oai.log.matching("DELETE", "/v1/videos/")))
	}
}
