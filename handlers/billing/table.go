package billing

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultCurrency is the currency shown when the configuration names none.
const DefaultCurrency = "USD"

// Table is the price of every priced model and the gateway's currency. A model without a
// price is free (its requests are still metered, at zero). The zero Table and a nil *Table
// price nothing.
type Table struct {
	currency string
	byModel  map[string]*Price
}

// NewTable checks prices and indexes them by model. currency is for display only (empty:
// USD); it must be 1 to 16 letters, digits or underscores, such as USD, EUR or credits.
func NewTable(currency string, prices []Price) (*Table, error) {
	if currency == "" {
		currency = DefaultCurrency
	}
	if len(currency) > 16 || strings.IndexFunc(currency, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) >= 0 {
		return nil, fmt.Errorf("currency %q: want 1 to 16 letters, digits or underscores, such as USD", currency)
	}
	t := &Table{currency: currency, byModel: make(map[string]*Price, len(prices))}
	for i := range prices {
		p := prices[i]
		if err := p.Validate(); err != nil {
			return nil, err
		}
		if _, dup := t.byModel[p.Model]; dup {
			return nil, fmt.Errorf("price %q is given twice", p.Model)
		}
		t.byModel[p.Model] = &p
	}
	return t, nil
}

// Currency is the gateway's currency, for display.
func (t *Table) Currency() string {
	if t == nil || t.currency == "" {
		return DefaultCurrency
	}
	return t.currency
}

// Price is the price of a model, and whether it has one.
func (t *Table) Price(model string) (*Price, bool) {
	if t == nil {
		return nil, false
	}
	p, ok := t.byModel[model]
	return p, ok
}

// Models are the priced models, sorted.
func (t *Table) Models() []string {
	if t == nil {
		return nil
	}
	models := make([]string, 0, len(t.byModel))
	for m := range t.byModel {
		models = append(models, m)
	}
	slices.Sort(models)
	return models
}
