package billing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The price a task was accepted at, kept in its record (storage.Task.HoldPrice) so that the task
// is settled at it when it finishes, whatever the price table says by then: a reload that
// changes or removes a model's price changes what new tasks cost, never what an accepted one is
// charged. The encoding is a short ASCII string, like Usage.Encode's: comma-separated name=value
// pairs of the units that are set, amounts and multipliers as decimal strings, such as
// "vt=2.5" or "s=0.4,s.1080p=0.6,a=1.5". The names are stored: never reuse one for another
// meaning.

// Encode writes p, less its model (the task's record names it), for DecodePrice.
func (p *Price) Encode() string {
	var b pairs
	for _, f := range priceAmounts(p) {
		if *f.v != 0 {
			b.add(f.name, f.v.String())
		}
	}
	for _, band := range Resolutions {
		if m, ok := p.SecondBands[band]; ok {
			b.add("s."+band, m.String())
		}
	}
	for _, ip := range p.ImageSizes {
		name := "i." + ip.Size
		if ip.Quality != "" {
			name += "." + ip.Quality
		}
		b.add(name, ip.Amount.String())
	}
	if p.Audio != 0 {
		b.add("a", p.Audio.String())
	}
	if p.Draft != 0 {
		b.add("d", p.Draft.String())
	}
	if p.MaxSeconds != 0 {
		b.add("ms", strconv.FormatInt(p.MaxSeconds, 10))
	}
	if p.MaxOutput != 0 {
		b.add("mo", strconv.FormatInt(p.MaxOutput, 10))
	}
	return b.String()
}

// DecodePrice reads what Price.Encode wrote, as the price of model, and checks it as a price
// block is checked (Price.Validate): a record that does not read as a valid price is an error,
// never a price read in part.
func DecodePrice(model, s string) (*Price, error) {
	p := &Price{Model: model}
	seen := map[string]bool{}
	for pair := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || seen[name] {
			return nil, fmt.Errorf("price %q: %q is not one more name=value", s, pair)
		}
		seen[name] = true
		if err := p.decodeUnit(name, value); err != nil {
			return nil, fmt.Errorf("price %q: %s: %w", s, name, err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeUnit sets the unit that name names to value.
func (p *Price) decodeUnit(name, value string) error {
	for _, f := range priceAmounts(p) {
		if f.name == name {
			return parseInto(f.v, value)
		}
	}
	switch {
	case name == "a" || name == "d":
		x, err := ParseMultiplier(value)
		if name == "a" {
			p.Audio = x
		} else {
			p.Draft = x
		}
		return err
	case name == "ms" || name == "mo":
		n, err := strconv.ParseInt(value, 10, 64)
		if name == "ms" {
			p.MaxSeconds = n
		} else {
			p.MaxOutput = n
		}
		return err
	case strings.HasPrefix(name, "s."):
		var m Money
		if p.SecondBands == nil {
			p.SecondBands = map[string]Money{}
		}
		err := parseInto(&m, value)
		p.SecondBands[name[2:]] = m
		return err
	case strings.HasPrefix(name, "i."):
		size, quality, _ := strings.Cut(name[2:], ".")
		ip := ImagePrice{Size: size, Quality: quality}
		err := parseInto(&ip.Amount, value)
		p.ImageSizes = append(p.ImageSizes, ip)
		return err
	}
	return errors.New("unknown unit")
}

func parseInto(m *Money, value string) error {
	n, err := ParseMoney(value)
	*m = n
	return err
}

// priceAmount is a Money unit of a Price and its name in the encoding.
type priceAmount struct {
	name string
	v    *Money
}

func priceAmounts(p *Price) [6]priceAmount {
	return [6]priceAmount{{"vt", &p.VideoTokens}, {"s", &p.Second}, {"i", &p.Image},
		{"it", &p.InputTokens}, {"ot", &p.OutputTokens}, {"q", &p.Request}}
}
