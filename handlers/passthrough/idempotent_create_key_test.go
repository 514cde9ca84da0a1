package passthrough

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
)

// What an idempotent create's retry must match (Route.RequestHash) covers everything of the
// request that reaches the provider. The query string is forwarded (rewrite keeps it, see
// TestRouteRewritesForTheProvider), so two creates that differ only in their query are two
// requests, and do not hash the same: else the second would be answered with the first's answer
// without reaching the provider.
func TestIdempotentCreateRequestHashCoversTheQuery(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	const body = `{"model":"doubao","prompt":"a lighthouse","seconds":"4"}`
	hashOf := func(target string) (string, string) {
		t.Helper()
		r := httptest.NewRequest("POST", target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "k")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		route.Done()
		return route.RequestHash, r.URL.RawQuery
	}
	h1, q1 := hashOf("/v1/videos?variant=1")
	h2, q2 := hashOf("/v1/videos?variant=2")
	if q1 != "variant=1" || q2 != "variant=2" {
		t.Fatalf("queries forwarded: %q, %q", q1, q2)
	}
	if h1 == "" || h1 == h2 {
		t.Fatalf("creates that reach the provider with other queries hash alike (%q): the second would get the first's answer", h1)
	}
}

// An Idempotency-Key the guard refuses elsewhere (docs/api.md#idempotency: an empty value or the
// header twice is 400 invalid_request; at most 255 printable ASCII characters) is refused on an
// idempotent create too: an empty header (a client's unset variable) would else make every create
// of the account with that body one request. A chat, which the gateway does not run once per
// key, is not refused for it (its key goes to the provider as before).
func TestIdempotentCreateInvalidKeysAreRefused(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	route := func(path, body string, keys []string) error {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header["Idempotency-Key"] = keys
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err == nil {
			route.Done()
		}
		return err
	}
	const video = `{"model":"doubao","prompt":"a lighthouse","seconds":"4"}`
	for name, keys := range map[string][]string{"empty": {""}, "too long": {strings.Repeat("k", 300)}, "not ASCII": {"cl\u00e9"}, "twice": {"k", "k"}} {
		err := route("/v1/videos", video, keys)
		var e *apierror.Error
		if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_request" || e.Param != "Idempotency-Key" {
			t.Errorf("%s key: a video create = %v, want 400 invalid_request on Idempotency-Key", name, err)
		}
	}
	if err := route("/v1/chat/completions", `{"model":"doubao"}`, []string{""}); err != nil {
		t.Errorf("a chat with an empty key = %v; the chat path does not check keys", err)
	}
}
