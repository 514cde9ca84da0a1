package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesAccount is a fake upstream account that stores responses: it answers creates with a
// response id of its own, and fails on command with 429 and Retry-After: 1.
type responsesAccount struct {
	*httptest.Server
	name    string
	failing atomic.Bool
	mu      sync.Mutex
	bodies  []string
}

func newResponsesAccount(t *testing.T, name, prefix string) *responsesAccount {
	a := &responsesAccount{name: name}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.bodies = append(a.bodies, string(body))
		n := len(a.bodies)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if a.failing.Load() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"busy","type":"rate_limit","code":"busy"}}`)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != prefix+"/v1/responses" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"no route","type":"invalid_request_error","code":null}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"resp_%s_%d_%d","object":"response","model":"other-chat","status":"completed","output":[]}`, name, n, time.Now().UnixNano())
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *responsesAccount) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

// A response stored at one upstream account of a provider is continued there: a request with its
// previous_response_id goes to that account, and only there, even while the provider's first
// choice is another, healthy account (which has no such response and must not see its id).
func TestPreviousResponseGoesToTheUpstreamThatMadeIt(t *testing.T) {
	a, b := newResponsesAccount(t, "a", ""), newResponsesAccount(t, "b", "/openai")
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL, "b_priority": "1"})
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-channels"), option.WithMaxRetries(0))
	ctx := context.Background()
	create := func(previous string) (*responses.Response, error) {
		params := responses.ResponseNewParams{Model: "other-chat", Store: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		if previous != "" {
			params.PreviousResponseID = openai.String(previous)
		}
		return client.Responses.New(ctx, params)
	}

	// a is busy: the response is made at b.
	a.failing.Store(true)
	first, err := create("")
	if err != nil || !strings.HasPrefix(first.ID, "resp_b_") {
		t.Fatalf("create while a is busy: %v", err)
	}
	a.failing.Store(false)
	// Once a's cooldown is over, a new response is a's again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := create("")
		if err == nil && strings.HasPrefix(r.ID, "resp_a_") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never served again: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	before := len(a.seen())
	next, err := create(first.ID)
	if err != nil || !strings.HasPrefix(next.ID, "resp_b_") {
		t.Fatalf("continuing %s: answered %v by %s", first.ID, err, func() string {
			if next == nil {
				return "nobody"
			}
			return next.ID
		}())
	}
	for _, body := range a.seen()[before:] {
		t.Fatalf("a was sent %s", body)
	}
	if bodies := b.seen(); !strings.Contains(bodies[len(bodies)-1], first.ID) {
		t.Fatalf("b's last request %s", bodies[len(bodies)-1])
	}
}
