package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// sharedHealthCaddyfile is the README's pass-through form: one provider with a single upstream,
// one with a main and a spare upstream, and three accounts.
const sharedHealthCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider {{solo}} {
			base_url {{solo_url}}/v1
			api_key  solo-key
			models   solo-chat
		}
		provider {{pair}} {
			models pair-chat
			upstream main {
				base_url {{main_url}}/v1
				api_key  main-key
			}
			upstream spare {
				base_url {{spare_url}}/v1
				api_key  spare-key
				priority 1
			}
		}
		key mg-poisoner {
			account mallory
		}
		key mg-normal {
			account alice
		}
		key mg-third {
			account carol
		}
	}
}
` + readmePassThroughSite

// requestFailingUpstream answers chat completions; a request whose body holds "poison-<status>"
// gets that status (with Retry-After: 3600 on a 429), as a request-specific failure does. When
// down is set, every request gets 503.
type requestFailingUpstream struct {
	*httptest.Server
	down     atomic.Bool
	requests atomic.Int64
}

func newRequestFailingUpstream(t *testing.T) *requestFailingUpstream {
	u := &requestFailingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		status := 0
		if _, rest, ok := strings.Cut(string(body), "poison-"); ok && len(rest) >= 3 {
			status, _ = strconv.Atoi(rest[:3])
		}
		if u.down.Load() {
			status = http.StatusServiceUnavailable
		}
		if status != 0 {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "3600")
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"failing with %d","type":"server_error","code":"failing"}}`, status)
			return
		}
		fmt.Fprint(w, `{"id":"c-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"answered"}}]}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// TestOneTenantCannotCoolAnUpstreamForOthers has one account draw request-specific 500s and
// 429s with a Retry-After of an hour from the only upstream of a provider: the other account
// gets its answers throughout, while the failing account is slowed by a backoff of its own,
// bounded by the honoured Retry-After's bound. A real outage, every account failing, still
// cools the upstream for all, and the requests go to the spare.
func TestOneTenantCannotCoolAnUpstreamForOthers(t *testing.T) {
	solo, main, spare := newRequestFailingUpstream(t), newRequestFailingUpstream(t), newRequestFailingUpstream(t)
	base, _ := startSimGateway(t, sharedHealthCaddyfile, map[string]string{
		"solo": uniqueName("solo"), "pair": uniqueName("pair"),
		"solo_url": solo.URL, "main_url": main.URL, "spare_url": spare.URL,
	})
	chat := func(key, model, text string) response {
		t.Helper()
		return call(t, http.MethodPost, base+"/v1/chat/completions", key, fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text))
	}

	for i := range 4 {
		if r := chat("mg-poisoner", "solo-chat", "poison-500"); r.status != http.StatusInternalServerError && r.status != http.StatusServiceUnavailable {
			t.Fatalf("poisoning request %d = %d %s", i, r.status, r.body)
		}
		if r := chat("mg-normal", "solo-chat", "hello"); r.status != http.StatusOK {
			t.Fatalf("after the poisoner's 500 number %d, the normal account got %d %s", i+1, r.status, r.body)
		}
	}
	// A 429 with an hour's Retry-After, drawn by one account: that account backs off (for no
	// more than the bound), the other does not.
	if r := chat("mg-third", "solo-chat", "poison-429"); r.status != http.StatusTooManyRequests {
		t.Fatalf("the 429 = %d %s", r.status, r.body)
	}
	before := solo.requests.Load()
	r := chat("mg-third", "solo-chat", "hello")
	retryAfter, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != http.StatusServiceUnavailable || retryAfter < 1 || retryAfter > 120 || solo.requests.Load() != before {
		t.Fatalf("the account that drew the 429, again = %d Retry-After %q %s; want its own backoff: 503, 1 to 120 s, the upstream not asked", r.status, r.header.Get("Retry-After"), r.body)
	}
	if r := chat("mg-normal", "solo-chat", "hello"); r.status != http.StatusOK {
		t.Fatalf("after another account's 429, the normal account got %d %s", r.status, r.body)
	}

	// A real outage: the main upstream fails every account. Each request is still answered by
	// the spare; once two accounts saw it fail, a third goes to the spare without trying main.
	main.down.Store(true)
	for _, key := range []string{"mg-normal", "mg-poisoner"} {
		if r := chat(key, "pair-chat", "hello"); r.status != http.StatusOK {
			t.Fatalf("during the outage, %s got %d %s", key, r.status, r.body)
		}
	}
	before = main.requests.Load()
	if r := chat("mg-third", "pair-chat", "hello"); r.status != http.StatusOK || main.requests.Load() != before {
		t.Fatalf("during the outage, a third account got %d %s, and main was asked %d times more; want main cooling down for all", r.status, r.body, main.requests.Load()-before)
	}
}
