package adaptor

import (
	"strconv"
	"strings"
)

// ParseSize reads a pixel size "{width}{sep}{height}" ("1280*720" with sep "*", "1280x720" with
// "x"); ok is false unless both are positive whole numbers.
func ParseSize(size, sep string) (w, h int64, ok bool) {
	ws, hs, found := strings.Cut(size, sep)
	if !found {
		return 0, 0, false
	}
	w, errW := strconv.ParseInt(ws, 10, 64)
	h, errH := strconv.ParseInt(hs, 10, 64)
	return w, h, errW == nil && errH == nil && w > 0 && h > 0
}

// Band is the contract's resolution of a pixel size, by its shorter side.
func Band(w, h int64) string {
	switch short := min(w, h); {
	case short >= 2160:
		return "4k"
	case short >= 1080:
		return "1080p"
	case short >= 720:
		return "720p"
	default:
		return "480p"
	}
}

// Ratio is the contract's ratio nearest to w:h.
func Ratio(w, h int64) string {
	best, bestDiff := "", 0.0
	for _, r := range []struct {
		name string
		w, h float64
	}{{"16:9", 16, 9}, {"9:16", 9, 16}, {"1:1", 1, 1}, {"4:3", 4, 3}, {"3:4", 3, 4}, {"21:9", 21, 9}} {
		d := float64(w)/float64(h) - r.w/r.h
		if d < 0 {
			d = -d
		}
		if best == "" || d < bestDiff {
			best, bestDiff = r.name, d
		}
	}
	return best
}
