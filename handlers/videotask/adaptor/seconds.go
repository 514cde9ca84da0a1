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
