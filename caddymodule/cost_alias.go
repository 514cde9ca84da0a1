package caddymodule

import (
	"fmt"
	"slices"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// pricesWithCosts is prices with the providers' cost lines added as what they are an alias of:
// `cost <model> <n>` is `price <model> { request <n> }`, and a provider's `cost <n>` (the key
// "*") gives that price to each model it serves that has no price and no cost of its own. A
// cost of 0 prices nothing (the model stays free). A model with both a price block and its own
// cost line is refused: the operator writes `request <n>` in the price block instead. So is a
// cost line for a model the provider does not serve, which would otherwise price nothing, and a
// negative cost (which the Caddyfile refuses, and JSON could otherwise give as a free model).
func pricesWithCosts(prices []billing.Price, providers []ProviderConfig) ([]billing.Price, error) {
	priced := func(model string) bool {
		return slices.ContainsFunc(prices, func(p billing.Price) bool { return p.Model == model })
	}
	out := slices.Clone(prices)
	for _, pc := range providers {
		for model, units := range pc.Costs {
			if units < 0 {
				// The Caddyfile refuses it; a JSON config must not make the model free by it.
				return nil, fmt.Errorf("provider %q: cost %s %d: a cost is a whole number, 0 or more", pc.Name, model, units)
			}
			if model != "*" && !slices.Contains(pc.Models, model) {
				// It would price nothing: the model meant stays free, and no quota or budget
				// limits it.
				return nil, fmt.Errorf("provider %q: cost %s %d: the provider does not serve %q: add it to its models, or correct the name (a cost names the client's model id, not a model_map target)",
					pc.Name, model, units, model)
			}
			if model != "*" && priced(model) {
				return nil, fmt.Errorf("provider %q: cost %s %d and price %s both price the model: write `request %d` in its price block instead of the cost",
					pc.Name, model, units, model, units)
			}
		}
		for _, model := range pc.Models {
			units, own := pc.Costs[model]
			if !own {
				units, own = pc.Costs["*"]
			}
			if !own || units <= 0 || priced(model) {
				continue
			}
			if units > storage.MaxAmount/billing.Micro {
				return nil, fmt.Errorf("provider %q: cost %d of %q is too large", pc.Name, units, model)
			}
			out = append(out, billing.Price{Model: model, Request: billing.Money(units * billing.Micro)})
		}
	}
	return out, nil
}

// quotaNeedsPrices refuses a key whose quota (an alias of a budget of that many units) could
// limit nothing because no model has a price: before billing in money every request cost one
// unit by default, so such a configuration meant "this many requests". The error says what to
// write to keep that meaning.
func quotaNeedsPrices(key storage.APIKey, prices *billing.Table) error {
	if key.Quota == nil || len(prices.Models()) > 0 {
		return nil
	}
	return fmt.Errorf("quota %d is a budget of %d %s, but no model has a price, so it would limit nothing: "+
		"add `cost 1` to the providers to charge 1 per request or task as the quota counted before, or price the models with `price` blocks",
		*key.Quota, *key.Quota, prices.Currency())
}
