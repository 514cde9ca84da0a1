package billing

import (
	"math"
	"math/bits"
)

// amountInt is Amount in integer arithmetic, exactly as big.Rat computes it, for every price
// whose numbers fit: the units other than video are each a whole number of millionths of a
// micro-unit, summed in an int64; the video part is a fraction of micro-units kept in lowest
// terms in two uint64 (videoFraction); their sum is rounded half up once, as Amount does. It
// allocates nothing, where big.Rat makes some forty objects per estimate or settlement. ok is
// false when a price or a video factor is negative, or when a step would overflow: Amount then
// computes it with big.Rat.
func (p *Price) amountInt(u Usage) (amount Money, ok bool) {
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
	video, ok := p.videoFraction(u)
	if !ok {
		return 0, false
	}
	total := fraction{uint64(millionths), 1_000_000, true} // not in lowest terms: rounded alike
	if video.num != 0 {
		if total = video.plus(total); !total.ok {
			return 0, false
		}
	}
	q, r := total.num/total.den, total.num%total.den
	if r >= total.den-r { // half a micro-unit or more rounds up
		q++
	}
	if q > math.MaxInt64 {
		return Money(math.MaxInt64), true // saturated, as roundHalfUp does
	}
	return Money(q), true
}

// videoFraction is videoAmount as a fraction in lowest terms (0/1 when u has no video or p no
// video price); ok is false when a factor is negative or a step would overflow.
func (p *Price) videoFraction(u Usage) (fraction, bool) {
	var amount fraction
	switch {
	case p.VideoTokens > 0:
		if amount = videoTokenFraction(u); amount.num == 0 {
			return amount, amount.ok
		}
		amount = amount.times(int64(p.VideoTokens), 1_000_000)
	case p.Second > 0 || len(p.SecondBands) > 0:
		if amount = newFraction(secondsFactors(u)); amount.num == 0 {
			return amount, amount.ok
		}
		amount = amount.times(int64(p.secondPrice(u.Resolution)), 1)
	default:
		return fraction{0, 1, true}, true
	}
	if u.Audio && p.Audio > 0 {
		amount = amount.times(int64(p.Audio), Micro)
	}
	if u.Draft && p.Draft > 0 {
		amount = amount.times(int64(p.Draft), Micro)
	}
	return amount, amount.ok
}

// videoTokenFraction is videoTokens as a fraction.
func videoTokenFraction(u Usage) fraction {
	if u.VideoTokens > 0 {
		return newFraction(u.VideoTokens, 1)
	}
	w, h, frames := tokenFactors(u)
	if frames <= 0 {
		return fraction{0, 1, true}
	}
	return newFraction(w, 1).times(h, 1).times(frames, 1024)
}

// fraction is a non-negative fraction num/den in lowest terms, or, when ok is false, the result
// of a step that would have overflowed or had a negative factor (every later step keeps it so).
type fraction struct {
	num, den uint64
	ok       bool
}

// newFraction is num/den (den > 0) in lowest terms; not ok when num is negative.
func newFraction(num, den int64) fraction {
	if num < 0 || den <= 0 {
		return fraction{}
	}
	g := gcd(uint64(num), uint64(den))
	return fraction{uint64(num) / g, uint64(den) / g, true}
}

// times is f × num/den (den > 0), in lowest terms: each factor's common divisors with the
// other's denominator are cancelled before the multiplication.
func (f fraction) times(num, den int64) fraction {
	if !f.ok || num < 0 || den <= 0 {
		return fraction{}
	}
	n, d := uint64(num), uint64(den)
	g1, g2 := gcd(f.num, d), gcd(n, f.den)
	hi1, resNum := bits.Mul64(f.num/g1, n/g2)
	hi2, resDen := bits.Mul64(f.den/g2, d/g1)
	if hi1 != 0 || hi2 != 0 {
		return fraction{}
	}
	return fraction{resNum, resDen, true}
}

// plus is f + o, in lowest terms.
func (f fraction) plus(o fraction) fraction {
	if !f.ok || !o.ok {
		return fraction{}
	}
	g := gcd(f.den, o.den)
	hi1, a := bits.Mul64(f.num, o.den/g)
	hi2, b := bits.Mul64(o.num, f.den/g)
	hi3, den := bits.Mul64(f.den, o.den/g)
	num, carry := bits.Add64(a, b, 0)
	if hi1|hi2|hi3|carry != 0 {
		return fraction{}
	}
	g = gcd(num, den)
	return fraction{num / g, den / g, true}
}

// gcd is the greatest common divisor of a and b; gcd(0, b) is b, and gcd(0, 0) is 1 (so that a
// division by it is harmless).
func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

// mulNonNegative is a × b for a, b ≥ 0, and whether it fits an int64.
func mulNonNegative(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= math.MaxInt64
}
