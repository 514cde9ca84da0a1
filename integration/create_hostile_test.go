package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/handlers/videotask"
)

// hostileCaddyfile serves the task API of two accounts against a fake Ark upstream ({{up_url}}).
const hostileCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider fake {
			base_url {{up_url}}/api/v3
			api_key fake-upstream-key
			models video-x
			cost 1
		}
		key mg-hostile-a {
			id hostile-a
			account acct-a
			quota 100000
		}
		key mg-hostile-b {
			id hostile-b
			account acct-b
			quota 100000
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// recordingArk is a fake Ark task upstream (the create and query of Ark's published task API)
// that keeps the body of every create it receives, under the id it answers. A create whose
// prompt holds "marker:<m>" gets the id "cgt-<m>", so that a test can tell which request an
// answer belongs to; others get "cgt-n<count>".
type recordingArk struct {
	mu      sync.Mutex
	bodies  map[string][]byte
	badAuth []string
	creates atomic.Int64
}

var markerRE = regexp.MustCompile(`marker:([a-z0-9-]+)`)

func (f *recordingArk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/contents/generations/tasks"):
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := f.creates.Add(1)
		id := fmt.Sprintf("cgt-n%d", n)
		if m := markerRE.FindSubmatch(body); m != nil {
			id = "cgt-" + string(m[1])
		}
		f.mu.Lock()
		if f.bodies == nil {
			f.bodies = make(map[string][]byte)
		}
		f.bodies[id] = body
		if got := r.Header.Get("Authorization"); got != "Bearer fake-upstream-key" {
			f.badAuth = append(f.badAuth, got)
		}
		f.mu.Unlock()
		fmt.Fprintf(w, `{"id":%q}`, id)
	case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/contents/generations/tasks/"):
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		fmt.Fprintf(w, `{"id":%q,"model":"video-x","status":"queued","created_at":1,"updated_at":1,"content":{}}`, id)
	default:
		http.NotFound(w, r)
	}
}

// body is the create body the upstream received under id.
func (f *recordingArk) body(id string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.bodies[id]
	return b, ok
}

func startHostileGateway(t *testing.T) (string, *recordingArk) {
	t.Helper()
	ark := &recordingArk{}
	up := httptest.NewServer(ark)
	t.Cleanup(up.Close)
	base, _ := startSimGateway(t, hostileCaddyfile, map[string]string{"up_url": up.URL})
	return base, ark
}

// TestCreateForwardsExactlyWhatWasChecked sends hostile create bodies through the gateway: each
// one the gateway refuses gets its status and code (spec §7.1) and reaches no upstream; each one
// it accepts reaches the upstream as the bytes ParseCreate checked (its Forward), and those
// decode, with the same key rule, to the fields checked.
func TestCreateForwardsExactlyWhatWasChecked(t *testing.T) {
	base, ark := startHostileGateway(t)
	const url = "/api/v3/contents/generations/tasks"
	text := func(extra string) string {
		return `{"model":"video-x","content":[{"type":"text","text":"a cat marker:m` + extra + `"}]`
	}
	many := func(n int) string {
		items := []string{`{"type":"text","text":"many marker:many"}`}
		for i := 1; i < n; i++ {
			items = append(items, fmt.Sprintf(`{"type":"image_url","image_url":{"url":"https://cdn.example.com/%d.png"},"role":"reference_image"}`, i))
		}
		return `{"model":"video-x","content":[` + strings.Join(items, ",") + `]}`
	}
	for _, tc := range []struct {
		name, body   string
		status       int
		code         string
		wantUpstream bool
	}{
		{"plain", text("plain") + `}`, 200, "", true},
		{"duplicate model", `{"model":"video-x","model":"other","content":[{"type":"text","text":"x marker:dup"}]}`, 400, "invalid_request", false},
		{"escaped duplicate model", `{"model":"video-x","mod\u0065l":"other","content":[{"type":"text","text":"x marker:dup2"}]}`, 400, "invalid_request", false},
		{"case-variant model", `{"model":"video-x","Model":"other","content":[{"type":"text","text":"x marker:case"}]}`, 400, "invalid_request", false},
		{"case-variant only", `{"MODEL":"video-x","content":[{"type":"text","text":"x marker:case2"}]}`, 400, "", false},
		{"duplicate type in an item", `{"model":"video-x","content":[{"type":"text","type":"image_url","text":"x marker:dupt"}]}`, 400, "invalid_request", false},
		{"duplicate url in a media object", `{"model":"video-x","content":[{"type":"text","text":"x marker:dupu"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","url":"http://127.0.0.1/"}}]}`, 400, "invalid_request", false},
		{"case-variant url in a media object", `{"model":"video-x","content":[{"type":"text","text":"x marker:caseu"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","URL":"http://127.0.0.1/"}}]}`, 400, "invalid_request", false},
		{"escaped known type", `{"model":"video-x","content":[{"type":"te\u0078t","text":"x marker:esct"}]}`, 200, "", true},
		{"escaped known role", `{"model":"video-x","content":[{"type":"text","text":"x marker:escr"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"reference_\u0069mage"}]}`, 200, "", true},
		{"role in another case", `{"model":"video-x","content":[{"type":"text","text":"x marker:rolec"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"Reference_Image"}]}`, 400, "invalid_request", false},
		{"modes mixed", `{"model":"video-x","content":[{"type":"text","text":"x marker:mix"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"first_frame"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/b.png"},"role":"reference_image"}]}`, 400, "invalid_request", false},
		{"unknown type", `{"model":"video-x","content":[{"type":"text","text":"x marker:unk"},{"type":"pdf_url","pdf_url":{"url":"https://cdn.example.com/a.pdf"}}]}`, 400, "unsupported_content_type", false},
		{"type in another case", `{"model":"video-x","content":[{"type":"Text","text":"x marker:tcase"}]}`, 400, "unsupported_content_type", false},
		{"unknown field passes", text("unknown") + `,"x_custom":{"a":[1,2,3]}}`, 200, "", true},
		{"huge seed", text("seed") + `,"seed":4294967296}`, 400, "invalid_request", false},
		{"huge priority", text("prio") + `,"priority":1e19}`, 400, "invalid_request", false},
		{"duration with a fraction", text("dur") + `,"duration":5.0}`, 200, "", true},
		{"duration as an exponent", text("dure") + `,"duration":0.5e1}`, 200, "", true},
		{"duration nearly an integer", text("durn") + `,"duration":5.0000000000000000001}`, 400, "invalid_request", false},
		{"resolution escaped", text("resesc") + `,"resolution":"72\u0030p"}`, 200, "", true},
		{"resolution in another case", text("rescase") + `,"resolution":"720P"}`, 400, "invalid_request", false},
		{"invalid UTF-8", text("utf") + `,"x":"` + "\xff\xfe" + `"}`, 400, "invalid_request", false},
		{"invalid UTF-8 in the prompt", `{"model":"video-x","content":[{"type":"text","text":"x marker:utf2 ` + "\xc3\x28" + `"}]}`, 400, "invalid_request", false},
		{"missing model", `{"content":[{"type":"text","text":"x marker:nomodel"}]}`, 400, "missing_model", false},
		{"empty model", `{"model":"","content":[{"type":"text","text":"x marker:emptymodel"}]}`, 400, "missing_model", false},
		{"model not a string", `{"model":5,"content":[{"type":"text","text":"x marker:nummodel"}]}`, 400, "invalid_request", false},
		{"trailing data", text("trail") + `}{"model":"other"}`, 400, "invalid_request", false},
		{"64 content items", many(64), 200, "", true},
		{"65 content items", many(65), 400, "invalid_request", false},
		{"not an object", `[1,2]`, 400, "invalid_request", false},
		{"empty text", `{"model":"video-x","content":[{"type":"text","text":"  "}]}`, 400, "invalid_request", false},
		{"audio alone", `{"model":"video-x","content":[{"type":"text","text":"x marker:aud"},{"type":"audio_url","audio_url":{"url":"https://cdn.example.com/a.mp3"}}]}`, 400, "invalid_request", false},
		{"empty media url", `{"model":"video-x","content":[{"type":"text","text":"x marker:emu"},{"type":"image_url","image_url":{"url":""}}]}`, 400, "invalid_request", false},
		{"another type's data", `{"model":"video-x","content":[{"type":"text","text":"x marker:otd","image_url":{"url":"http://127.0.0.1/"}}]}`, 400, "invalid_request", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ark.creates.Load()
			r := call(t, "POST", base+url, "mg-hostile-a", tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d (%s), want %d", r.status, r.body, tc.status)
			}
			if tc.status != 200 {
				if m := r.json(t); tc.code != "" && m["code"] != tc.code || m["message"] == "" || m["data"] != nil {
					t.Fatalf("answer %s; want code %q, a message and data null", r.body, tc.code)
				}
				if n := ark.creates.Load() - before; n != 0 {
					t.Fatalf("a refused create reached the upstream %d times", n)
				}
				return
			}
			id := r.field("id")
			got, ok := ark.body(id)
			if !ok {
				t.Fatalf("answer id %q is not an id the upstream gave (%s)", id, r.body)
			}
			checked, err := videotask.ParseCreate([]byte(tc.body))
			if err != nil {
				t.Fatalf("ParseCreate refuses a body the gateway accepted: %v", err)
			}
			if !bytes.Equal(got, checked.Forward) {
				t.Fatalf("the upstream received\n%s\nthe gateway checked\n%s", got, checked.Forward)
			}
			// What the upstream reads is what the gateway read: parsing the received bytes
			// again gives the same model and priced fields, and forwards them unchanged.
			again, err := videotask.ParseCreate(got)
			if err != nil {
				t.Fatalf("the upstream received a body the gateway would refuse: %v\n%s", err, got)
			}
			if again.Model != checked.Model || !reflect.DeepEqual(again.Billing, checked.Billing) || !bytes.Equal(again.Forward, got) {
				t.Fatalf("the received body reads as %+v, the sent one as %+v", again, checked)
			}
		})
	}
	ark.mu.Lock()
	defer ark.mu.Unlock()
	if len(ark.badAuth) != 0 {
		t.Fatalf("the upstream was called with other credentials: %q", ark.badAuth)
	}
}

// TestConcurrentCreatesOfTwoAccountsStayApart runs creates of two accounts at once, of
// different sizes, some with an Idempotency-Key: each answer is the id of the upstream task made
// from that very request's body (byte for byte what the client sent), each account reads its
// own tasks only, and no request's bytes appear in another's upstream body or answer.
func TestConcurrentCreatesOfTwoAccountsStayApart(t *testing.T) {
	base, ark := startHostileGateway(t)
	const url = "/api/v3/contents/generations/tasks"
	const workers, each = 8, 12
	type sent struct{ key, marker, body, id string }
	results := make([][]sent, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key, acct := "mg-hostile-a", "a"
			if w%2 == 1 {
				key, acct = "mg-hostile-b", "b"
			}
			for i := range each {
				marker := fmt.Sprintf("%s-%d-%d", acct, w, i)
				// Prompts of varied length, so that a buffer reused across requests
				// would show a longer one's tail in a shorter one.
				pad := strings.Repeat(acct, 1+(w*7+i*13)%300)
				body := fmt.Sprintf(`{"model":"video-x","content":[{"type":"text","text":"%s marker:%s"}],"x_account":%q}`, pad, marker, acct)
				req, err := http.NewRequest("POST", base+url, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				if i%3 == 0 {
					req.Header.Set("Idempotency-Key", "k-"+marker)
				}
				r, err := sendRequest(req)
				if err != nil {
					t.Error(err)
					return
				}
				if r.status != 200 {
					t.Errorf("%s: %d %s", marker, r.status, r.body)
					return
				}
				if want := `{"id":"cgt-` + marker + `"}` + "\n"; string(r.body) != want {
					t.Errorf("%s: answer %q, want %q", marker, r.body, want)
				}
				results[w] = append(results[w], sent{key, marker, body, r.field("id")})
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, list := range results {
		for _, s := range list {
			got, ok := ark.body(s.id)
			if !ok || string(got) != s.body {
				t.Fatalf("%s: the upstream received %q, the client sent %q", s.marker, got, s.body)
			}
			other := "mg-hostile-b"
			if s.key == other {
				other = "mg-hostile-a"
			}
			if r := call(t, "GET", base+url+"/"+s.id, s.key, nil); r.status != 200 || r.field("id") != s.id {
				t.Fatalf("%s: its own account reads %d %s", s.marker, r.status, r.body)
			}
			if r := call(t, "GET", base+url+"/"+s.id, other, nil); r.status != 400 || !strings.Contains(string(r.body), "task_not_exist") {
				t.Fatalf("%s: the other account reads %d %s", s.marker, r.status, r.body)
			}
		}
	}
	if n := ark.creates.Load(); n != workers*each {
		t.Fatalf("the upstream received %d creates; %d were sent", n, workers*each)
	}
}

// TestIdempotentCreateReplaysAndRunsOnce: the same key and body answers the first answer again
// (Idempotent-Replayed) without a second upstream create; concurrent duplicates make one task;
// a different body with the key is 422; a request without the key is never replayed.
func TestIdempotentCreateReplaysAndRunsOnce(t *testing.T) {
	base, ark := startHostileGateway(t)
	const url = "/api/v3/contents/generations/tasks"
	post := func(key, idem, body string) (response, error) {
		req, err := http.NewRequest("POST", base+url, strings.NewReader(body))
		if err != nil {
			return response{}, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		return sendRequest(req)
	}
	body := `{"model":"video-x","content":[{"type":"text","text":"once marker:once"}]}`
	first, err := post("mg-hostile-a", "same", body)
	if err != nil || first.status != 200 {
		t.Fatalf("first create: %v %d %s", err, first.status, first.body)
	}
	again, err := post("mg-hostile-a", "same", body)
	if err != nil || again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %d %s %v; want the first answer %s, replayed", err, again.status, again.body, again.header, first.body)
	}
	if n := ark.creates.Load(); n != 1 {
		t.Fatalf("%d upstream creates after a replay; want 1", n)
	}
	// The other account's key of the same name is its own.
	other, err := post("mg-hostile-b", "same", strings.Replace(body, "marker:once", "marker:oncebee", 1))
	if err != nil || other.status != 200 || other.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("another account with the same key: %v %d %s", err, other.status, other.body)
	}
	if r, _ := post("mg-hostile-a", "same", strings.Replace(body, "once", "twice", 1)); r.status != 422 || !strings.Contains(string(r.body), "idempotency_key_reused") {
		t.Fatalf("the key with another body: %d %s; want 422", r.status, r.body)
	}
	for _, bad := range []string{"", strings.Repeat("k", 256), "k\xc3\xa9"} {
		req, _ := http.NewRequest("POST", base+url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg-hostile-a")
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = []string{bad}
		if r := do(t, req); r.status != 400 || !strings.Contains(string(r.body), "invalid_request") {
			t.Fatalf("Idempotency-Key %q: %d %s; want 400 invalid_request", bad, r.status, r.body)
		}
	}
	// Concurrent duplicates: one create upstream, the same id to every 200.
	before := ark.creates.Load()
	dup := `{"model":"video-x","content":[{"type":"text","text":"dup marker:dup"}]}`
	var wg sync.WaitGroup
	answers := make([]response, 8)
	for i := range answers {
		wg.Go(func() {
			r, err := post("mg-hostile-a", "concurrent", dup)
			if err != nil {
				t.Error(err)
			}
			answers[i] = r
		})
	}
	wg.Wait()
	if n := ark.creates.Load() - before; n != 1 {
		t.Fatalf("%d upstream creates for 8 concurrent duplicates; want 1", n)
	}
	for _, r := range answers {
		switch {
		case r.status == 200 && r.field("id") == "cgt-dup":
		case r.status == 409 && strings.Contains(string(r.body), "idempotency_in_progress"):
		default:
			t.Fatalf("a concurrent duplicate answered %d %s", r.status, r.body)
		}
	}
	// Without the key two equal bodies are two tasks (no replay).
	before = ark.creates.Load()
	plain := `{"model":"video-x","content":[{"type":"text","text":"plain"}]}`
	r1, _ := post("mg-hostile-a", "", plain)
	r2, _ := post("mg-hostile-a", "", plain)
	if r1.status != 200 || r2.status != 200 || r1.field("id") == r2.field("id") || r2.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("two creates without a key: %d %s, %d %s", r1.status, r1.body, r2.status, r2.body)
	}
	if n := ark.creates.Load() - before; n != 2 {
		t.Fatalf("%d upstream creates for two without a key; want 2", n)
	}
}
