package billing

import "slices"

// Pricing is a model's price as clients see it in the model list: the currency and one line
// per priced unit. Amounts are decimal strings.
type Pricing struct {
	// Currency is the gateway's currency, such as "USD".
	Currency string `json:"currency"`
	// Prices are the model's units, in a fixed order: video_tokens, second (then its
	// resolution bands in 480p, 720p, 1080p, 4k order), image (then its sizes as configured),
	// input_tokens, output_tokens, the cache write prices when set, request.
	Prices []UnitPrice `json:"prices"`
	// Multipliers apply to the video units: "audio" when the video has generated sound,
	// "draft" for a draft task.
	Multipliers map[string]Multiplier `json:"multipliers,omitempty"`
}

// UnitPrice is the price of one unit.
type UnitPrice struct {
	// Unit is "video_token", "second", "image", "input_token", "output_token",
	// "cache_write_5m_token", "cache_write_1h_token", "cache_read_token" or "request".
	Unit string `json:"unit"`
	// Per is how many units Amount buys: 1000000 for the token units, else 1.
	Per int64 `json:"per"`
	// Amount is the price of Per units.
	Amount Money `json:"amount"`
	// Resolution narrows a second price to one resolution band.
	Resolution string `json:"resolution,omitempty"`
	// Size and Quality narrow an image price to one size and quality.
	Size    string `json:"size,omitempty"`
	Quality string `json:"quality,omitempty"`
}

// Pricing is p as the model list shows it.
func (p *Price) Pricing(currency string) Pricing {
	out := Pricing{Currency: currency, Prices: []UnitPrice{}}
	add := func(u UnitPrice) {
		if u.Per == 0 {
			u.Per = 1
		}
		out.Prices = append(out.Prices, u)
	}
	if p.VideoTokens > 0 {
		add(UnitPrice{Unit: "video_token", Per: 1_000_000, Amount: p.VideoTokens})
	}
	if p.Second > 0 {
		add(UnitPrice{Unit: "second", Amount: p.Second})
	}
	for _, band := range Resolutions {
		if m, ok := p.SecondBands[band]; ok {
			add(UnitPrice{Unit: "second", Amount: m, Resolution: band})
		}
	}
	if p.Image > 0 {
		add(UnitPrice{Unit: "image", Amount: p.Image})
	}
	for _, ip := range p.ImageSizes {
		add(UnitPrice{Unit: "image", Amount: ip.Amount, Size: ip.Size, Quality: ip.Quality})
	}
	if p.InputTokens > 0 {
		add(UnitPrice{Unit: "input_token", Per: 1_000_000, Amount: p.InputTokens})
	}
	if p.OutputTokens > 0 {
		add(UnitPrice{Unit: "output_token", Per: 1_000_000, Amount: p.OutputTokens})
	}
	if p.CacheWrite5mTokens > 0 {
		add(UnitPrice{Unit: "cache_write_5m_token", Per: 1_000_000, Amount: p.CacheWrite5mTokens})
	}
	if p.CacheWrite1hTokens > 0 {
		add(UnitPrice{Unit: "cache_write_1h_token", Per: 1_000_000, Amount: p.CacheWrite1hTokens})
	}
	if p.CacheReadTokens > 0 {
		add(UnitPrice{Unit: "cache_read_token", Per: 1_000_000, Amount: p.CacheReadTokens})
	}
	if p.Request > 0 {
		add(UnitPrice{Unit: "request", Amount: p.Request})
	}
	if p.Audio > 0 || p.Draft > 0 {
		out.Multipliers = map[string]Multiplier{}
		if p.Audio > 0 {
			out.Multipliers["audio"] = p.Audio
		}
		if p.Draft > 0 {
			out.Multipliers["draft"] = p.Draft
		}
	}
	out.Prices = slices.Clip(out.Prices)
	return out
}
