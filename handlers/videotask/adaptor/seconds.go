package adaptor

// WholeSeconds is a video length a provider reported in seconds as a number (a JSON number, or
// a string it sent one in), made whole by round (math.Round, math.Trunc: the provider's own
// rule). A length that is not a positive number an int64 holds (NaN, ±Inf, negative, 1e300,
// 2^63 and past) is 0: not reported, so that billing takes the estimate's length, and the task's
// answer shows none. A Go conversion of such a float to int64 is not defined (amd64 gives
// -2^63, arm64 saturates), so none is made.
func WholeSeconds(d float64, round func(float64) float64) int64 {
	d = round(d)
	if !(d > 0) || d >= 1<<63 { // !(NaN > 0) holds
		return 0
	}
	return int64(d)
}

// NearestLength is the length of offered (ascending, at least one) nearest to duration: of two
// equally near, the longer. A provider that makes only some lengths is asked for this one, so
// that a request of the contract's range is made, not refused.
func NearestLength(duration int64, offered []int64) int64 {
	best := offered[0]
	for _, s := range offered[1:] {
		if distance(s, duration) <= distance(best, duration) {
			best = s
		}
	}
	return best
}

// distance is |a - b|, which the contract's lengths (-1 to 15) and a provider's keep far from
// overflow.
func distance(a, b int64) int64 { return max(a-b, b-a) }
