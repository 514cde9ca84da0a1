package passthrough

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// An object is reached through the upstream that created it, at the address it had then: once
// the upstream's name stands for another base URL, the object is unknown (its id never goes
// there). A record without an address is found by name, as before addresses were kept.
func TestObjectBoundToItsUpstreamsAddress(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	ctx := context.Background()
	now := time.Now().Unix()
	for _, rec := range []storage.Task{
		{ID: "video_here", Upstream: "default", UpstreamAddress: "https://ark.example.com/api/v3"},
		{ID: "video_old", Upstream: "default"},
		{ID: "video_moved", Upstream: "default", UpstreamAddress: "https://ark-old.example.com/api/v3"},
	} {
		rec.Kind, rec.Account, rec.Provider, rec.Model, rec.CreatedAt = KindVideo, "acme", "ark", "doubao", now
		if _, err := store.CreateTask(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	for _, id := range []string{"video_here", "video_old"} {
		r := httptest.NewRequest("GET", "/v1/videos/"+id, nil)
		route, err := rt.Route(httptest.NewRecorder(), r, acme)
		if err != nil || route.BoundTo == nil || route.BoundTo.BaseURL.Host != "ark.example.com" {
			t.Fatalf("%s: %v, bound to %+v", id, err, route.BoundTo)
		}
	}
	r := httptest.NewRequest("GET", "/v1/videos/video_moved", nil)
	_, err := rt.Route(httptest.NewRecorder(), r, acme)
	wantError(t, err, 404, "not_found")
}
