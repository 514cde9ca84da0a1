package passthrough

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
)

// A create answered with an object its account has recorded already is the provider's replay of
// the create that made it only when both sent the same Idempotency-Key (as Route scoped it) to
// the same upstream for the same model: then CreatedWriter.Replayed is set and the caller
// releases its hold. Without a key, with another key, for another model, or from another
// account, it is not one (another account's id is refused outright).
func TestCreateAnsweredWithARecordedObjectIsAReplayOnlyByItsKey(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	scoped := func(account, value string) string {
		r := httptest.NewRequest("POST", "/v1/videos", nil)
		r.Header.Set("Idempotency-Key", value)
		return scopeIdempotencyKey(r.Header, account)
	}
	create := func(id auth.Identity, key, model, answer string) (*CreatedWriter, *httptest.ResponseRecorder) {
		t.Helper()
		route := Route{Model: model, Provider: p, Creates: KindVideo, IdempotencyKey: key}
		w := httptest.NewRecorder()
		cw := rt.Created(w, httptest.NewRequest("POST", "/v1/videos", nil), id, route)
		proxyTo(cw, "application/json", answer)
		cw.Finish()
		return cw, w
	}
	first := scoped("acme", "retry-7")
	if cw, w := create(acme, first, "doubao", `{"id":"video_r1"}`); cw.Replayed() || w.Code != 200 {
		t.Fatalf("the first create: replayed %v, %d %s", cw.Replayed(), w.Code, w.Body)
	}
	if rec, err := store.Task(context.Background(), "video_r1"); err != nil || rec.IdempotencyKey != first || !strings.HasPrefix(first, "mg-") {
		t.Fatalf("record %+v, %v; want the scoped key %q", rec, err, first)
	}
	for _, tc := range []struct {
		name, key, model string
		replay           bool
	}{
		{"the same key", first, "doubao", true},
		{"no key", "", "doubao", false},
		{"another key", scoped("acme", "retry-8"), "doubao", false},
		{"the key another account's value makes", scoped("other", "retry-7"), "doubao", false},
		{"the same key for another model", first, "seedance", false},
	} {
		cw, w := create(acme, tc.key, tc.model, `{"id":"video_r1"}`)
		if cw.Replayed() != tc.replay || w.Code != 200 || cw.KeptSlot() || cw.HeldBy() != "" {
			t.Errorf("%s: replayed %v (want %v), %d %s", tc.name, cw.Replayed(), tc.replay, w.Code, w.Body)
		}
	}
	// Another account answered with the id, whatever its key, is refused and never a replay.
	cw, w := create(auth.Identity{Account: "other", KeyID: "k2"}, first, "doubao", `{"id":"video_r1"}`)
	if cw.Replayed() || w.Code != 500 {
		t.Fatalf("another account: replayed %v, %d %s", cw.Replayed(), w.Code, w.Body)
	}
	// A record without a key (written before it was kept, or by a create that sent none) makes
	// no create a replay, not even one without a key.
	create(acme, "", "doubao", `{"id":"video_r2"}`)
	for _, key := range []string{"", first} {
		if cw, _ := create(acme, key, "doubao", `{"id":"video_r2"}`); cw.Replayed() {
			t.Fatalf("a create with key %q replays a record without one", key)
		}
	}
}

// Route answers the one scoped key a request sends; none for a request that sends several.
func TestRouteKeepsTheOneIdempotencyKey(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	routed := func(keys ...string) (Route, []string) {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"doubao"}`))
		r.Header.Set("Content-Type", "application/json")
		for _, k := range keys {
			r.Header.Add("Idempotency-Key", k)
		}
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatal(err)
		}
		route.Done()
		return route, r.Header.Values("Idempotency-Key")
	}
	if route, sent := routed("k-1"); len(sent) != 1 || route.IdempotencyKey != sent[0] {
		t.Fatalf("one key: route keeps %q, sent %q", route.IdempotencyKey, sent)
	}
	if route, sent := routed("k-1", "k-2"); len(sent) != 2 || route.IdempotencyKey != "" {
		t.Fatalf("two keys: route keeps %q, sent %q", route.IdempotencyKey, sent)
	}
	if route, _ := routed(); route.IdempotencyKey != "" {
		t.Fatalf("no key: route keeps %q", route.IdempotencyKey)
	}
}
