package passthrough

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
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

// A body that names an owned object (previous_response_id) goes to the upstream that created it,
// and only there, at the address it had then: among several upstreams of the provider the one
// that made the response; none once its name stands for another base URL, nor at another
// provider. The id never reaches an upstream that did not make it.
func TestReferencedObjectBindsTheRequest(t *testing.T) {
	store := ownersStore(t)
	mk := func(bBase string) *providers.Catalog {
		up := func(name, base string) *providers.Upstream {
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			return &providers.Upstream{Name: name, BaseURL: u, APIKey: name + "-key"}
		}
		c, err := providers.NewCatalog([]*providers.Provider{
			{Name: "ark", Models: []string{"doubao"}, Upstreams: []*providers.Upstream{
				up("a", "https://a.example.com/api/v3"), up("b", bBase)}},
			{Name: "openai", Models: []string{"gpt"}, Upstreams: []*providers.Upstream{up("default", "https://o.example.com/v1")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	now := time.Now()
	for _, rec := range []storage.Task{
		{ID: "resp_on_b", Upstream: "b", UpstreamAddress: "https://b.example.com/api/v3"},
		{ID: "resp_legacy", Upstream: "b"},
	} {
		rec.Kind, rec.Account, rec.Provider, rec.Model, rec.CreatedAt, rec.ExpiresAt = KindResponse, "acme", "ark", "doubao", now.Unix(), now.Add(time.Hour).Unix()
		if _, err := store.CreateTask(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	route := func(c *providers.Catalog, body string) (Route, error) {
		rt := &Router{Catalog: c, Owners: store, Logger: zap.NewNop()}
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return rt.Route(httptest.NewRecorder(), r, acme)
	}
	here := mk("https://b.example.com/api/v3/")
	for _, prev := range []string{"resp_on_b", "resp_legacy"} {
		for range 8 { // the provider's order would pick a now and then
			rt, err := route(here, `{"model":"doubao","previous_response_id":"`+prev+`","input":"more"}`)
			if err != nil {
				t.Fatalf("%s: %v", prev, err)
			}
			rt.Dispatch.Attempt(rt.Dispatch.First())
			if rt.BoundTo == nil || rt.BoundTo.Name != "b" || rt.Dispatch.First().Name != "b" || rt.Dispatch.CanRetry() {
				t.Fatalf("%s: bound to %+v, dispatched first to %s", prev, rt.BoundTo, rt.Dispatch.First().Name)
			}
		}
	}
	// Without a reference the provider's order applies.
	if rt, err := route(here, `{"model":"doubao","input":"new"}`); err != nil || rt.BoundTo != nil {
		t.Fatalf("no reference: %v, bound to %+v", err, rt.BoundTo)
	}
	// The name b now stands for another base URL: the response is not there.
	if _, err := route(mk("https://b2.example.com/api/v3"), `{"model":"doubao","previous_response_id":"resp_on_b","input":"more"}`); err == nil {
		t.Fatal("a response was asked for at another address")
	} else if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "previous_response_id" {
		t.Fatal(e)
	}
	// A model of another provider: the id would go to that provider.
	if _, err := route(here, `{"model":"gpt","previous_response_id":"resp_on_b","input":"more"}`); err == nil {
		t.Fatal("a response of ark was named in a request to openai")
	} else if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "previous_response_id" {
		t.Fatal(e)
	}
}
