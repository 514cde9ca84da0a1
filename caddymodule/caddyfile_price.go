package caddymodule

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/mediagw/mediagw/handlers/billing"
)

// parsePrice reads one price block of the mediagw global option. Syntax:
//
//	price <model> {
//		video_tokens  <amount>                  # per million tokens
//		second        [<resolution>] <amount>   # per second of output; a resolution band overrides
//		audio         <multiplier>
//		draft         <multiplier>
//		image         [<size> [<quality>]] <amount>
//		input_tokens  <amount>                  # per million
//		output_tokens <amount>                  # per million
//		cache_write_5m_tokens <amount>          # per million written to a 5-minute prompt cache; default 1.25 × input_tokens
//		cache_write_1h_tokens <amount>          # per million written to a 1-hour prompt cache; default 2 × input_tokens
//		cache_read_tokens <amount>              # per million read from a prompt cache (Anthropic's); default 0.1 × input_tokens
//		request       <amount>
//		max_seconds   <n>                       # the estimate of duration -1; default 15
//		max_output    <n>                       # the output-token estimate; default 4096
//	}
//
// Amounts and multipliers are decimals of at most six decimals, such as 0.40 or 1.5.
func parsePrice(d *caddyfile.Dispenser) (billing.Price, error) {
	var p billing.Price
	if !d.NextArg() {
		return p, d.Err("price needs a model id: price <model> { … }")
	}
	p.Model = d.Val()
	if d.NextArg() {
		return p, d.ArgErr()
	}
	where := fmt.Sprintf("price %q: ", p.Model)
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if !slices.Contains(priceSubdirectives, sub) {
			return p, unknownSubdirective(d, where, priceSubdirectives)
		}
		args := d.RemainingArgs()
		if len(args) == 0 {
			return p, d.Errf("%s%s needs a value", where, sub)
		}
		// second and image repeat, once per band or size; the rest appear once.
		key := sub
		if sub == "second" || sub == "image" {
			key = fmt.Sprint(sub, args[:len(args)-1])
		}
		if seen[key] {
			return p, d.Errf("%sduplicate subdirective %s", where, describe(sub, args))
		}
		seen[key] = true
		if err := setPriceUnit(&p, sub, args); err != nil {
			return p, d.Errf("%s%v", where, err)
		}
	}
	if err := p.Validate(); err != nil {
		return p, d.Err(err.Error())
	}
	return p, nil
}

// priceSubdirectives are the subdirectives of a price block, for the error that names a misspelt one.
var priceSubdirectives = []string{"video_tokens", "second", "audio", "draft", "image", "input_tokens",
	"output_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens", "request", "max_seconds", "max_output"}

// setPriceUnit sets one subdirective of a price block from its arguments.
func setPriceUnit(p *billing.Price, sub string, args []string) error {
	last := args[len(args)-1]
	one := func() error {
		if len(args) != 1 {
			return fmt.Errorf("usage: %s <amount>", sub)
		}
		return nil
	}
	switch sub {
	case "video_tokens", "input_tokens", "output_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens", "request":
		if err := one(); err != nil {
			return err
		}
		amount, err := priceAmount(sub, last)
		if err != nil {
			return err
		}
		*map[string]*billing.Money{"video_tokens": &p.VideoTokens, "input_tokens": &p.InputTokens,
			"output_tokens": &p.OutputTokens, "cache_write_5m_tokens": &p.CacheWrite5mTokens,
			"cache_write_1h_tokens": &p.CacheWrite1hTokens, "cache_read_tokens": &p.CacheReadTokens,
			"request": &p.Request}[sub] = amount
	case "second":
		amount, err := priceAmount(sub, last)
		if err != nil {
			return err
		}
		switch len(args) {
		case 1:
			p.Second = amount
		case 2:
			if !slices.Contains(billing.Resolutions, args[0]) {
				return fmt.Errorf("second %s: the resolution must be one of 480p, 720p, 1080p, 4k", args[0])
			}
			if p.SecondBands == nil {
				p.SecondBands = map[string]billing.Money{}
			}
			p.SecondBands[args[0]] = amount
		default:
			return fmt.Errorf("usage: second [<resolution>] <amount>")
		}
	case "image":
		amount, err := priceAmount(sub, last)
		if err != nil {
			return err
		}
		switch len(args) {
		case 1:
			p.Image = amount
		case 2, 3:
			ip := billing.ImagePrice{Size: args[0], Amount: amount}
			if len(args) == 3 {
				ip.Quality = args[1]
			}
			p.ImageSizes = append(p.ImageSizes, ip)
		default:
			return fmt.Errorf("usage: image [<size> [<quality>]] <amount>")
		}
	case "audio", "draft":
		if err := one(); err != nil {
			return err
		}
		factor, err := billing.ParseMultiplier(last)
		if err != nil || factor == 0 {
			return fmt.Errorf("%s: want a multiplier above 0 such as 1.5, got %q", sub, last)
		}
		*map[string]*billing.Multiplier{"audio": &p.Audio, "draft": &p.Draft}[sub] = factor
	case "max_seconds", "max_output":
		if err := one(); err != nil {
			return err
		}
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 1 || sub == "max_seconds" && n > 3600 {
			return fmt.Errorf("%s: want a whole number of at least 1, got %q", sub, last)
		}
		*map[string]*int64{"max_seconds": &p.MaxSeconds, "max_output": &p.MaxOutput}[sub] = n
	}
	return nil
}

// priceAmount reads a non-negative amount of money.
func priceAmount(sub, s string) (billing.Money, error) {
	amount, err := billing.ParseMoney(s)
	if err != nil || amount < 0 {
		return 0, fmt.Errorf("%s: want an amount of 0 or more with at most 6 decimals, such as 0.40, got %q", sub, s)
	}
	return amount, nil
}

// describe spells a subdirective and its arguments but the last (the amount), for an error.
func describe(sub string, args []string) string {
	out := sub
	for _, a := range args[:len(args)-1] {
		out += " " + a
	}
	return out
}
