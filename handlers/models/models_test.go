package models

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
)

func TestListIsFilteredAndSorted(t *testing.T) {
	u, _ := url.Parse("https://up.example.com/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{
		{Name: "b", BaseURL: u, Models: []string{"zeta", "alpha"}},
		{Name: "a", BaseURL: u, Models: []string{"mid"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Created: 42}
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{nil, []string{"alpha", "mid", "zeta"}},
		{[]string{"?eta", "mi*"}, []string{"mid", "zeta"}},
		{[]string{"none"}, []string{}},
	} {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{Models: tc.patterns}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var list List
		if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || list.Object != "list" {
			t.Fatalf("body %s: %v", w.Body, err)
		}
		got := []string{}
		for _, m := range list.Data {
			got = append(got, m.ID)
			if m.Object != "model" || m.Created != 42 || (m.ID == "mid") != (m.OwnedBy == "a") {
				t.Fatalf("item %+v", m)
			}
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || (len(got) > 1 && got[1] != tc.want[1]) {
			t.Errorf("patterns %v: %v, want %v", tc.patterns, got, tc.want)
		}
	}
	r := httptest.NewRequest("GET", "/v1/models", nil) // no identity: auth did not run
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 401 {
		t.Fatalf("without identity = %d", w.Code)
	}
}

// TestListCarriesPricing checks that a priced model's item carries its pricing, amounts as
// decimal strings with the currency and units, and that an unpriced model's item has none.
func TestListCarriesPricing(t *testing.T) {
	u, _ := url.Parse("https://up.example.com/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: u, Models: []string{"veo-3", "free"}}})
	if err != nil {
		t.Fatal(err)
	}
	prices, err := billing.NewTable("EUR", []billing.Price{{Model: "veo-3", Second: 400_000,
		SecondBands: map[string]billing.Money{"1080p": 600_000}, Audio: 1_500_000}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Prices: prices}
	r := httptest.NewRequest("GET", "/v1/models", nil)
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var list struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("body %s: %v", w.Body, err)
	}
	if _, has := list.Data[0]["pricing"]; has {
		t.Errorf("the unpriced model's item has pricing: %s", w.Body)
	}
	want := `{"currency":"EUR","prices":[{"unit":"second","per":1,"amount":"0.4"},` +
		`{"unit":"second","per":1,"amount":"0.6","resolution":"1080p"}],"multipliers":{"audio":"1.5"}}`
	if got := string(list.Data[1]["pricing"]); got != want {
		t.Errorf("pricing = %s\nwant      %s", got, want)
	}
}
