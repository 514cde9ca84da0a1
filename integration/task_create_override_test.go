package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestTaskCreateWithAMethodMemberIsRefused: the task API forwards the members of a create body it
// does not know to an Ark upstream as they are, and web frameworks that honour ?_method= (Laravel,
// Symfony) read a JSON body's _method too and take the POST for that method. So a create with
// "_method" (in any letter case) is 400 invalid_request naming it, as pass-through refuses it,
// and the upstream never sees it; a plain create, by the Ark Go SDK, is still taken. Before, each
// was forwarded and the upstream made a task of it.
func TestTaskCreateWithAMethodMemberIsRefused(t *testing.T) {
	up, base := startScripted(t, hostileAnswersCaddyfile)
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-hostile-answers"
	for _, member := range []string{`"_method":"DELETE"`, `"_METHOD":"GET"`, `"_Method":"PUT"`, `"_method":null`} {
		r := call(t, "POST", tasks, key, `{"model":"video-h",`+member+`,"content":[{"type":"text","text":"a cat"}]}`)
		if r.status != 400 || !strings.Contains(string(r.body), `"invalid_request"`) || !strings.Contains(string(r.body), "_method") {
			t.Errorf("a create with %s = %d %s; want 400 invalid_request naming _method", member, r.status, r.body)
		}
	}
	up.mu.Lock()
	made := up.n
	up.mu.Unlock()
	if made != 0 {
		t.Fatalf("the upstream made %d tasks of the refused creates", made)
	}
	plain := textTask("a cat")
	plain.Model = "video-h"
	got, err := arkClient(base, key).CreateContentGenerationTask(context.Background(), plain)
	if err != nil || got.ID == "" {
		t.Fatalf("a plain create: %+v, %v", got, err)
	}
}

// TestReplayedCreateIsNosniff: a create retried with its Idempotency-Key gets the first answer
// replayed (Idempotent-Replayed: true) with its type and X-Content-Type-Options: nosniff, as the
// first answer had, on the task API and on /v1/videos. Before, the replay had no nosniff.
func TestReplayedCreateIsNosniff(t *testing.T) {
	_, base := startScripted(t, hostileAnswersCaddyfile)
	const key = "mg-hostile-answers"
	for _, c := range []struct{ path, body string }{
		{"/api/v3/contents/generations/tasks", `{"model":"video-h","content":[{"type":"text","text":"a cat"}]}`},
		{"/v1/videos", `{"model":"video-h","prompt":"a cat"}`},
	} {
		create := func() response {
			req, _ := http.NewRequest("POST", base+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "replay-nosniff-1")
			return do(t, req)
		}
		first, again := create(), create()
		if first.status != 200 || first.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: first create = %d %v %s", c.path, first.status, first.header, first.body)
		}
		if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
			t.Fatalf("%s: retry = %d %v %s; want the first answer replayed", c.path, again.status, again.header, again.body)
		}
		if got := again.header.Get("X-Content-Type-Options"); got != "nosniff" || again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Errorf("%s: replayed answer typed %q, X-Content-Type-Options %q; want %q, nosniff", c.path,
				again.header.Get("Content-Type"), got, first.header.Get("Content-Type"))
		}
	}
}
