package adaptor

import (
	"math"
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

// The contract's resolutions, by the short side of a picture in pixels, and its ratios. Band and
// Ratio are the one mapping of a pixel size onto them, used both ways: for the size a client asks
// for (the OpenAI-style front's size) and for the size a provider reports, so that a size is
// the same resolution, and the same price, whichever way it comes.
var (
	Resolutions = []struct {
		Name string
		Side int64
	}{{"480p", 480}, {"720p", 720}, {"1080p", 1080}, {"4k", 2160}}
	Ratios = []struct {
		Name string
		W, H int64
	}{{"16:9", 16, 9}, {"4:3", 4, 3}, {"1:1", 1, 1}, {"3:4", 3, 4}, {"9:16", 9, 16}, {"21:9", 21, 9}}
)

// Band is the contract's resolution of a pixel size: the one whose short side is nearest to the
// size's, by proportion (1024 is nearer 1080 than 720: Sora's 1024x1792 is 1080p), the lower one
// on a tie.
func Band(w, h int64) string {
	short, name, best := min(w, h), "", math.Inf(1)
	for _, r := range Resolutions {
		if d := math.Abs(math.Log(float64(short) / float64(r.Side))); d < best {
			name, best = r.Name, d
		}
	}
	return name
}

// Ratio is the contract's ratio nearest to w:h, by proportion, so that a portrait size and its
// landscape twin get twin ratios; the earlier of Ratios on a tie.
func Ratio(w, h int64) string {
	name, best := "", math.Inf(1)
	for _, r := range Ratios {
		if d := math.Abs(math.Log(float64(w*r.H) / float64(h*r.W))); d < best {
			name, best = r.Name, d
		}
	}
	return name
}
