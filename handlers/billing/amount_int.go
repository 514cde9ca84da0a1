package billing

import (
	"math"
	"math/bits"
)

// amountWithoutVideo is Amount of a price without video units (a chat, an image or a request
// price), in int64 arithmetic: every part is a whole number of millionths of a micro-unit, so
// the sum is exact as such and is rounded half up once, as Amount does. It allocates nothing,
// where big.Rat makes some forty objects per request. ok is false when the price has video
// units or a negative price, or when a product or the sum would overflow: Amount then
// computes it with big.Rat.
func (p *Price) amountWithoutVideo(u Usage) (amount Money, ok bool) {
	if p.VideoTokens != 0 || p.Second != 0 || len(p.SecondBands) != 0 {
		return 0, false
	}
	var millionths int64 // of a micro-unit
	for _, part := range p.flatParts(u) {
		if part.count <= 0 || part.price == 0 {
			continue
		}
		if part.price < 0 {
			return 0, false
		}
		n, fits := mulNonNegative(part.count, part.price)
		if fits {
			n, fits = mulNonNegative(n, 1_000_000/part.per)
		}
		if !fits || n > math.MaxInt64-millionths {
			return 0, false
		}
		millionths += n
	}
	if millionths > math.MaxInt64-500_000 {
		return 0, false
	}
	return Money((millionths + 500_000) / 1_000_000), true
}

// mulNonNegative is a × b for a, b ≥ 0, and whether it fits an int64.
func mulNonNegative(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= math.MaxInt64
}
