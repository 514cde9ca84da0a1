package simulator

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

func do(s *Simulator, method, path, body string) (int, map[string]any) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer k")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var m map[string]any
	json.Unmarshal(w.Body.Bytes(), &m)
	return w.Code, m
}

func TestTaskLifecycle(t *testing.T) {
	clock := testclock.New(time.Unix(1_000_000, 0))
	s := New()
	s.Now = clock.Now
	const tasks = "/api/v3/contents/generations/tasks"
	_, created := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"x"}],"return_last_frame":true}`)
	id := created["id"].(string)
	_, failing := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"`+FailMarker+`"}]}`)

	for _, step := range []struct {
		after  time.Duration
		status string
	}{{0, "queued"}, {2 * time.Second, "running"}, {5 * time.Second, "succeeded"}} {
		clock.Advance(step.after)
		if _, got := do(s, "GET", tasks+"/"+id, ""); got["status"] != step.status {
			t.Fatalf("after %v: %v", step.after, got)
		}
	}
	_, done := do(s, "GET", tasks+"/"+id, "")
	content := done["content"].(map[string]any)
	if content["video_url"] == nil || content["last_frame_url"] == nil || done["resolution"] != "720p" {
		t.Fatalf("succeeded = %v", done)
	}
	_, failed := do(s, "GET", tasks+"/"+failing["id"].(string), "")
	if failed["status"] != "failed" || failed["error"] == nil {
		t.Fatalf("failed = %v", failed)
	}
	if code, _ := do(s, "DELETE", tasks+"/"+id, ""); code != 200 {
		t.Fatal("deleting a finished task")
	}
	if code, _ := do(s, "GET", tasks+"/"+id, ""); code != 404 {
		t.Fatal("a deleted task is still there")
	}

	_, q := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"y"}]}`)
	if code, _ := do(s, "DELETE", tasks+"/"+q["id"].(string), ""); code != 200 {
		t.Fatal("cancelling a queued task")
	}
	if _, got := do(s, "GET", tasks+"/"+q["id"].(string), ""); got["status"] != "cancelled" {
		t.Fatalf("cancelled = %v", got)
	}
	_, r := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"z"}]}`)
	clock.Advance(3 * time.Second)
	if code, _ := do(s, "DELETE", tasks+"/"+r["id"].(string), ""); code != 409 {
		t.Fatalf("cancelling a running task = %d", code)
	}
}

func TestSimulatorNeedsAToken(t *testing.T) {
	s := New()
	s.APIKey = "right"
	r := httptest.NewRequest("GET", "/v1/models", nil)
	r.Header.Set("Authorization", "Bearer wrong")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 401 {
		t.Fatalf("wrong token = %d", w.Code)
	}
}

func TestListFiltersByTaskIDs(t *testing.T) {
	s := New()
	const tasks = "/api/v3/contents/generations/tasks"
	var ids []string
	for range 5 {
		_, c := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"x"}]}`)
		ids = append(ids, c["id"].(string))
	}
	_, got := do(s, "GET", tasks+"?filter.task_ids="+ids[1]+"&filter.task_ids="+ids[3]+"&filter.task_ids=cgt-unknown&page_size=500", "")
	items, _ := got["items"].([]any)
	if got["total"] != float64(2) || len(items) != 2 {
		t.Fatalf("filtered list = %v", got)
	}
	found := map[string]bool{}
	for _, it := range items {
		found[it.(map[string]any)["id"].(string)] = true
	}
	if !found[ids[1]] || !found[ids[3]] {
		t.Fatalf("filtered list has %v, want %s and %s", found, ids[1], ids[3])
	}
	_, page := do(s, "GET", tasks+"?page_size=2&page_num=3", "")
	if items, _ := page["items"].([]any); page["total"] != float64(5) || len(items) != 1 || items[0].(map[string]any)["id"] != ids[0] {
		t.Fatalf("page 3 of 2 = %v", page)
	}
	if code, _ := do(s, "GET", tasks+"?page_size=501", ""); code != 400 {
		t.Fatalf("page_size 501 = %d", code)
	}
	if s.ListCalls() != 2 { // the refused one is not served
		t.Fatalf("ListCalls = %d", s.ListCalls())
	}
}
