package billing

import (
	"math"
	"math/big"
)

// Amount is what u costs at price p: the sum of every unit u uses, computed as an exact
// fraction of micro-units and rounded once, at the end, half up to the micro-unit (0.0000005
// becomes 0.000001). The units:
//
//   - video_tokens: VideoTokens × price / 1,000,000. When the provider reported no tokens they
//     are computed as Ark does, width × height × fps × seconds / 1024, from Width and Height
//     (else the published size of Resolution and Ratio), FPS (default 24), and VideoFrames
//     (else VideoSeconds × fps), counting ReferenceVideoSeconds too.
//   - second: seconds × the price of Resolution's band (else second); seconds are
//     VideoFrames / FPS when frames are known, else VideoSeconds.
//   - both video units are multiplied by audio when Audio is set and by draft when Draft is.
//   - image: Images × the price of ImageSize and ImageQuality.
//   - input_tokens, output_tokens: tokens × price / 1,000,000; input tokens written to a prompt
//     cache (CacheWrite5mTokens, CacheWrite1hTokens, at most InputTokens) at the cache write
//     prices instead (see cacheWritePrices), and those read from one (CacheReadTokens, at
//     most the rest) at the cache read price (see cacheReadPrice).
//   - request: Requests × price.
func (p *Price) Amount(u Usage) Money {
	if amount, ok := p.amountInt(u); ok {
		return amount
	}
	return p.amountExact(u)
}

// amountExact is Amount computed with big.Rat, whatever the price.
func (p *Price) amountExact(u Usage) Money {
	total := new(big.Rat)
	if video := p.videoAmount(u); video != nil {
		total.Add(total, video)
	}
	for _, part := range p.flatParts(u) {
		if part.count > 0 && part.price != 0 {
			total.Add(total, product(part.per, part.count, part.price))
		}
	}
	return roundHalfUp(total)
}

// flatPart is one unit of Amount other than video: count × price / per micro-units.
type flatPart struct{ count, price, per int64 }

// flatParts are the units of u that are not video (images, input and output tokens, requests),
// shared by the exact and the int64 computation of Amount. A part with no count or no price adds
// nothing; a negative token or request price counts as none.
func (p *Price) flatParts(u Usage) [7]flatPart {
	image := int64(0)
	if u.Images > 0 {
		image = int64(p.imagePrice(u.ImageSize, u.ImageQuality))
	}
	input := max(u.InputTokens, 0)
	hour := min(max(u.CacheWrite1hTokens, 0), input)
	minutes := min(max(u.CacheWrite5mTokens, 0), input-hour)
	reads := min(max(u.CacheReadTokens, 0), input-hour-minutes)
	write5m, write1h := p.cacheWritePrices()
	return [7]flatPart{
		{u.Images, image, 1},
		{input - hour - minutes - reads, max(int64(p.InputTokens), 0), 1_000_000},
		{minutes, write5m, 1_000_000},
		{hour, write1h, 1_000_000},
		{reads, p.cacheReadPrice(), 1_000_000},
		{u.OutputTokens, max(int64(p.OutputTokens), 0), 1_000_000},
		{u.Requests, max(int64(p.Request), 0), 1},
	}
}

// cacheReadPrice is the price of one million input tokens read from a prompt cache: the price's
// own, else Anthropic's published rate of its input price, 0.1 × (rounded up to the micro-unit).
func (p *Price) cacheReadPrice() int64 {
	if p.CacheReadTokens > 0 {
		return int64(p.CacheReadTokens)
	}
	input := max(int64(p.InputTokens), 0)
	read := input / 10
	if input%10 != 0 {
		read++
	}
	return read
}

// cacheWritePrices are the prices of one million input tokens written to a prompt cache for 5
// minutes and for 1 hour: the price's own, else Anthropic's published rates of its input price,
// 1.25 × (rounded up to the micro-unit) and 2 ×, saturating at the largest amount.
func (p *Price) cacheWritePrices() (minutes, hour int64) {
	input := max(int64(p.InputTokens), 0)
	minutes, hour = int64(p.CacheWrite5mTokens), int64(p.CacheWrite1hTokens)
	if minutes <= 0 {
		minutes = input + input/4 // input × 1.25, rounded up
		if input%4 != 0 {
			minutes++
		}
		if minutes < input {
			minutes = math.MaxInt64
		}
	}
	if hour <= 0 {
		hour = input * 2
		if hour < input {
			hour = math.MaxInt64
		}
	}
	return minutes, hour
}

// videoAmount is the exact video part of Amount, or nil when u has no video or p no video price.
func (p *Price) videoAmount(u Usage) *big.Rat {
	var amount *big.Rat
	switch {
	case p.VideoTokens > 0:
		tokens := videoTokens(u)
		if tokens.Sign() == 0 {
			return nil
		}
		amount = tokens.Mul(tokens, ratOf(int64(p.VideoTokens), 1_000_000))
	case p.Second > 0 || len(p.SecondBands) > 0:
		seconds := videoSeconds(u)
		if seconds.Sign() == 0 {
			return nil
		}
		amount = seconds.Mul(seconds, ratOf(int64(p.secondPrice(u.Resolution)), 1))
	default:
		return nil
	}
	if u.Audio && p.Audio > 0 {
		amount.Mul(amount, ratOf(int64(p.Audio), Micro))
	}
	if u.Draft && p.Draft > 0 {
		amount.Mul(amount, ratOf(int64(p.Draft), Micro))
	}
	return amount
}

// videoTokens are the tokens of u: as reported, or width × height × frames / 1024 (see
// tokenFactors).
func videoTokens(u Usage) *big.Rat {
	if u.VideoTokens > 0 {
		return ratOf(u.VideoTokens, 1)
	}
	w, h, frames := tokenFactors(u)
	if frames <= 0 {
		return new(big.Rat)
	}
	return product(1024, w, h, frames)
}

// tokenFactors are the width, height and frames of u's token formula: frames are VideoFrames
// (else VideoSeconds × fps, fps defaulting to DefaultFPS) plus ReferenceVideoSeconds × fps; the
// size is Width × Height, else the published size of Resolution and Ratio. frames ≤ 0: no video.
func tokenFactors(u Usage) (w, h, frames int64) {
	fps := u.FPS
	if fps <= 0 {
		fps = DefaultFPS
	}
	frames = u.VideoFrames
	if frames <= 0 {
		frames = u.VideoSeconds * fps
	}
	frames += u.ReferenceVideoSeconds * fps
	if frames <= 0 {
		return 0, 0, frames
	}
	w, h = u.Width, u.Height
	if w <= 0 || h <= 0 {
		s := sizeOf(u.Resolution, u.Ratio)
		w, h = s.Width, s.Height
	}
	return w, h, frames
}

// videoSeconds is the output length of u in seconds (see secondsFactors).
func videoSeconds(u Usage) *big.Rat { return ratOf(secondsFactors(u)) }

// secondsFactors are the output length of u in seconds as num/den: VideoFrames / fps (fps
// defaulting to DefaultFPS) when frames are known, else VideoSeconds (none when negative).
func secondsFactors(u Usage) (num, den int64) {
	if u.VideoFrames > 0 {
		fps := u.FPS
		if fps <= 0 {
			fps = DefaultFPS
		}
		return u.VideoFrames, fps
	}
	return max(u.VideoSeconds, 0), 1
}

// product is the exact fraction f1 × f2 × … / den.
func product(den int64, factors ...int64) *big.Rat {
	num := big.NewInt(1)
	for _, f := range factors {
		num.Mul(num, big.NewInt(f))
	}
	return new(big.Rat).SetFrac(num, big.NewInt(den))
}

func ratOf(num, den int64) *big.Rat { return big.NewRat(num, den) }

// roundHalfUp rounds a non-negative fraction of micro-units half up to a whole micro-unit.
// Amounts beyond the int64 range (over nine trillion units) saturate.
func roundHalfUp(r *big.Rat) Money {
	num := new(big.Int).Mul(r.Num(), big.NewInt(2))
	num.Add(num, r.Denom())
	den := new(big.Int).Mul(r.Denom(), big.NewInt(2))
	q := num.Quo(num, den)
	if !q.IsInt64() {
		return Money(1<<63 - 1)
	}
	return Money(q.Int64())
}
