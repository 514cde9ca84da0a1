package console

import (
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/keyadmin"
)

// priceRow is one model of the prices page: its price units in words, or none (free).
type priceRow struct {
	Model string
	Units []priceUnit
}

// priceUnit is one unit of a model's price, such as "per second at 720p: 0.05".
type priceUnit struct {
	Unit, Amount string
}

type pricesData struct {
	Currency string
	Rows     []priceRow
	// Member is true when the list holds only the models the member's account's keys may use.
	Member bool
}

// prices shows the price of every model the gateway serves or prices; a member sees only the
// models that one of their account's usable keys allows, and one logged in with a key restricted
// to some models only those.
func (h *Handler) prices(w http.ResponseWriter, r *http.Request, s *session) {
	models := map[string]bool{}
	if h.Models != nil {
		for _, m := range h.Models() {
			models[m] = true
		}
	}
	for _, m := range h.Prices.Models() {
		models[m] = true
	}
	d := pricesData{Currency: h.Prices.Currency(), Member: !s.user.Operator()}
	allowed, err := h.modelsShown(r, s)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	names := make([]string, 0, len(models))
	for m := range models {
		if allowed(m) {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	for _, m := range names {
		row := priceRow{Model: m}
		if p, ok := h.Prices.Price(m); ok {
			row.Units = priceUnits(p)
		}
		d.Rows = append(d.Rows, row)
	}
	h.show(w, s, "prices", "Prices", d)
}

// modelsShown reports which models the user is shown (the prices page, the playground): every
// model to an operator; to a member the models that one of their account's usable keys allows,
// and to a member logged in with a key restricted to some models only those, as the gateway's
// model list shows that key.
func (h *Handler) modelsShown(r *http.Request, s *session) (func(model string) bool, error) {
	if s.user.Operator() {
		return func(string) bool { return true }, nil
	}
	keys, err := h.accountKeys(r, s.user.Account)
	if err != nil {
		return nil, err
	}
	id, now := s.identity(), h.now()
	return func(model string) bool { return id.AllowsModel(model) && usableKeyAllows(keys, model, now) }, nil
}

// usableKeyAllows reports whether one of keys that is neither disabled nor expired at now (from
// its expiry on, as the gateway refuses it) allows model.
func usableKeyAllows(keys []keyadmin.KeyView, model string, now time.Time) bool {
	for _, k := range keys {
		if k.Disabled || (k.Expires != nil && !now.Before(*k.Expires)) {
			continue
		}
		if (auth.Identity{Models: k.Models}).AllowsModel(model) {
			return true
		}
	}
	return false
}

// priceUnits writes the units a price charges, in the order an operator configures them.
func priceUnits(p *billing.Price) []priceUnit {
	var units []priceUnit
	money := func(unit string, m billing.Money) {
		if m != 0 {
			units = append(units, priceUnit{unit, m.String()})
		}
	}
	times := func(unit string, x billing.Multiplier) {
		if x != 0 && x.String() != "1" {
			units = append(units, priceUnit{unit, "× " + x.String()})
		}
	}
	money("per million video tokens", p.VideoTokens)
	money("per second of video", p.Second)
	for _, res := range billing.Resolutions {
		if m, ok := p.SecondBands[res]; ok {
			money("per second of video at "+res, m)
		}
	}
	times("with generated audio", p.Audio)
	times("for a draft", p.Draft)
	money("per image", p.Image)
	sizes := slices.Clone(p.ImageSizes)
	sort.SliceStable(sizes, func(i, j int) bool { return sizes[i].Size < sizes[j].Size })
	for _, s := range sizes {
		unit := "per image of " + s.Size
		if s.Quality != "" {
			unit += ", " + s.Quality + " quality"
		}
		money(unit, s.Amount)
	}
	money("per million input tokens", p.InputTokens)
	money("per million output tokens", p.OutputTokens)
	money("per request", p.Request)
	return units
}
