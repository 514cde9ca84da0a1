package caddymodule

import (
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestCostIsARequestPrice: `cost <model> <n>` is the price {request n}; a provider's `cost <n>`
// prices each model it serves that has no price or cost of its own; a cost of 0 leaves a model
// free; a price block wins over the provider's default; a model's own cost beside its price
// block is refused with what to write instead.
func TestCostIsARequestPrice(t *testing.T) {
	providers := []ProviderConfig{
		{Name: "a", Models: []string{"own", "default", "free", "priced"}, Costs: map[string]int64{"own": 25, "*": 10, "free": 0}},
		{Name: "b", Models: []string{"unpriced"}},
	}
	prices, err := pricesWithCosts([]billing.Price{{Model: "priced", Second: 400_000}}, providers)
	if err != nil {
		t.Fatal(err)
	}
	table, err := billing.NewTable("", prices)
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]string{"own": "25", "default": "10"} {
		p, ok := table.Price(model)
		if !ok || p.Request.String() != want || p.Amount(billing.Usage{Requests: 1}).String() != want {
			t.Errorf("price of %s = %+v, want request %s", model, p, want)
		}
	}
	for _, model := range []string{"free", "unpriced"} {
		if p, ok := table.Price(model); ok {
			t.Errorf("%s has a price %+v; want none (free)", model, p)
		}
	}
	if p, _ := table.Price("priced"); p.Request != 0 || p.Second != 400_000 {
		t.Errorf("the price block was changed by the provider's default cost: %+v", p)
	}

	providers[0].Costs["priced"] = 3
	_, err = pricesWithCosts([]billing.Price{{Model: "priced", Second: 400_000}}, providers)
	if err == nil || !strings.Contains(err.Error(), "write `request 3` in its price block") {
		t.Fatalf("a cost beside a price block = %v", err)
	}
}

// TestQuotaNeedsAPrice: a quota (a budget of that many units) on a gateway where nothing has a
// price would limit nothing; the configuration is refused with what to write.
func TestQuotaNeedsAPrice(t *testing.T) {
	quota := int64(100)
	key := storage.APIKey{ID: "k", Limits: storage.Limits{Quota: &quota}}
	none, _ := billing.NewTable("", nil)
	if err := quotaNeedsPrices(key, none); err == nil || !strings.Contains(err.Error(), "add `cost 1` to the providers") {
		t.Fatalf("quota without prices = %v", err)
	}
	some, _ := billing.NewTable("", []billing.Price{{Model: "m", Request: billing.Micro}})
	if err := quotaNeedsPrices(key, some); err != nil {
		t.Fatalf("quota with a price = %v", err)
	}
	if err := quotaNeedsPrices(storage.APIKey{ID: "free"}, none); err != nil {
		t.Fatalf("no quota = %v", err)
	}
	q, none2 := key.Limits.SpendingLimit()
	if none2 || q.Limit != 100*billing.Micro || q.Period != storage.BudgetTotal {
		t.Fatalf("quota 100 spends %+v (none %v), want a budget of 100 for all time", q, none2)
	}
}

// TestCostOfAnUnservedModelIsRefused: a cost line naming a model its provider does not serve
// (a typo, or an upstream id behind a model_map) would price nothing, leaving the served model
// free and every quota and budget unable to limit it; it is refused, with or without a price.
func TestCostOfAnUnservedModelIsRefused(t *testing.T) {
	for _, units := range []int64{5, 0} {
		providers := []ProviderConfig{
			{Name: "ark", Models: []string{"seedance-1-0-pro"}, Costs: map[string]int64{"seedance-pro": units}},
			{Name: "other", Models: []string{"seedance-pro-elsewhere"}},
		}
		_, err := pricesWithCosts(nil, providers)
		if err == nil || !strings.Contains(err.Error(), `provider "ark": cost seedance-pro`) || !strings.Contains(err.Error(), "does not serve") {
			t.Errorf("cost %d of an unserved model = %v; want it refused naming the provider and the model", units, err)
		}
	}
	for _, model := range []string{"seedance-1-0-pro", "*"} {
		negative := []ProviderConfig{{Name: "ark", Models: []string{"seedance-1-0-pro"}, Costs: map[string]int64{model: -5}}}
		if _, err := pricesWithCosts(nil, negative); err == nil || !strings.Contains(err.Error(), "0 or more") {
			t.Errorf("a negative cost of %s (JSON config) = %v; want it refused, not a free model", model, err)
		}
	}
	served := []ProviderConfig{{Name: "ark", Models: []string{"seedance-1-0-pro"}, Costs: map[string]int64{"seedance-1-0-pro": 5, "*": 1}}}
	if _, err := pricesWithCosts(nil, served); err != nil {
		t.Errorf("cost of a served model and a default cost = %v", err)
	}
}
