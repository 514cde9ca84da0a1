package videotask

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// hailuo is MiniMax's video API as its reference describes it, reduced to one task: created,
// then Success with a file id, whose download address it serves; while limited is set, each read
// answers HTTP 200 with base_resp.status_code 1002 (MiniMax's rate limit).
type hailuo struct {
	mu      sync.Mutex
	reads   int
	limited bool
	// createLimited answers the creates with 1002 too.
	createLimited bool
	created       int
}

func (m *hailuo) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case r.URL.Path == "/cdn/file-1.mp4":
		io.WriteString(w, "video bytes")
	case r.Method == http.MethodPost && m.createLimited:
		io.WriteString(w, `{"task_id":"","base_resp":{"status_code":1002,"status_msg":"rate limit exceeded(RPM)"}}`)
	case r.Method == http.MethodPost:
		m.created++
		fmt.Fprintf(w, `{"task_id":"10691611220000%d","base_resp":{"status_code":0,"status_msg":"success"}}`, m.created)
	case m.limited:
		m.reads++
		io.WriteString(w, `{"base_resp":{"status_code":1002,"status_msg":"rate limit exceeded(RPM)"}}`)
	case strings.HasSuffix(r.URL.Path, "/query/video_generation"):
		m.reads++
		io.WriteString(w, `{"task_id":"106916112200001","status":"Success","file_id":"file-1","video_width":1280,"video_height":720,"base_resp":{"status_code":0,"status_msg":"success"}}`)
	default:
		m.reads++
		io.WriteString(w, `{"file":{"file_id":"file-1","download_url":"http://`+r.Host+`/cdn/file-1.mp4"},"base_resp":{"status_code":0,"status_msg":"success"}}`)
	}
}

func (m *hailuo) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// MiniMax answers its rate limit inside an HTTP 200 (status_code 1002). Met by a content read,
// it is the 429 it stands for: the client gets 429 with a Retry-After, and the upstream pauses,
// so that a poll of the task right after reads nothing (the stored answer is served).
func TestContentRateLimitInA200PausesTheUpstream(t *testing.T) {
	m := &hailuo{}
	now := time.Unix(1_800_000_000, 0)
	h, u := newHandlerBefore(t, m.serve, adaptor.MiniMax, "/v1", 0, &now)
	w := serveAccount(h, "alice", http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"hi"}]}`)
	id, _ := decode(t, w)["id"].(string)
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id, ""); !strings.Contains(w.Body.String(), `"succeeded"`) {
		t.Fatalf("poll: %d %s", w.Code, w.Body)
	}
	if w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", ""); w.Code != http.StatusOK || w.Body.String() != "video bytes" {
		t.Fatalf("content: %d %s", w.Code, w.Body)
	}

	m.mu.Lock()
	m.limited = true
	m.mu.Unlock()
	now = now.Add(time.Minute) // a fresh second of max_rps, whatever the reads before
	w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("content met by MiniMax's 1002 = %d (Retry-After %q) %s; want 429 with a Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if !u.PausedUntil().After(now) {
		t.Fatal("MiniMax's 1002 to a content read did not pause the upstream")
	}
	before := m.readCount()
	serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", "")
	if n := m.readCount() - before; n != 0 {
		t.Fatalf("%d calls reached MiniMax within the pause its 1002 asked for", n)
	}
}

// MiniMax's rate limit inside an HTTP 200 (status_code 1002) to a create is the 429 it stands
// for, as another provider's 429 is: the client gets 429, its account backs off the upstream,
// and the upstream's reads go on (providers limit creates and reads apart).
func TestCreateRateLimitInA200BacksTheAccountOff(t *testing.T) {
	m := &hailuo{}
	now := time.Unix(1_800_000_000, 0)
	h, u := newHandlerBefore(t, m.serve, adaptor.MiniMax, "/v1", 0, &now)
	w := serveAccount(h, "bob", http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"hi"}]}`)
	bobTask, _ := decode(t, w)["id"].(string)
	if w.Code != http.StatusOK || bobTask == "" {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	m.mu.Lock()
	m.createLimited = true
	m.mu.Unlock()
	now = now.Add(10 * time.Second)
	if w = serveAccount(h, "acme", http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"hi"}]}`); w.Code != http.StatusTooManyRequests {
		t.Fatalf("create met by MiniMax's 1002 = %d %s; want 429", w.Code, w.Body)
	}
	if !u.CoolingUntil("acme").After(now) {
		t.Fatal("the account whose create met MiniMax's 1002 does not back off")
	}
	if u.PausedUntil().After(now) {
		t.Fatal("a create's 1002 paused the upstream's reads")
	}
	before := m.readCount()
	if w = serveAccount(h, "bob", http.MethodGet, createPath+"/"+bobTask, ""); w.Code != http.StatusOK || m.readCount() == before {
		t.Fatalf("bob's poll after acme's create met 1002: %d %s, %d reads; want a read", w.Code, w.Body, m.readCount()-before)
	}
}
