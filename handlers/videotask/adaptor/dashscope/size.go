package dashscope

import (
	"strconv"
	"strings"
)

// sizes are the text-to-video pixel sizes (parameters.size, "width*height") that DashScope's
// reference lists, by the contract's resolution and ratio.
var sizes = map[string]map[string]string{
	"480p": {"16:9": "832*480", "9:16": "480*832", "1:1": "624*624"},
	"720p": {"16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088"},
	"1080p": {"16:9": "1920*1080", "9:16": "1080*1920", "1:1": "1440*1440", "4:3": "1632*1248",
		"3:4": "1248*1632"},
}

// pixelSize is the size for a resolution and ratio; a ratio not given (or adaptive) is 16:9, a
// resolution not given leaves the size to the model.
func pixelSize(resolution, ratio string) (string, bool) {
	bySize, ok := sizes[strings.ToLower(resolution)]
	if !ok {
		return "", false
	}
	if s, ok := bySize[ratio]; ok {
		return s, true
	}
	return bySize["16:9"], true
}

// parseSize reads "1280*720".
func parseSize(s string) (w, h int64, ok bool) {
	ws, hs, found := strings.Cut(s, "*")
	if !found {
		return 0, 0, false
	}
	w, err1 := strconv.ParseInt(ws, 10, 64)
	h, err2 := strconv.ParseInt(hs, 10, 64)
	return w, h, err1 == nil && err2 == nil && w > 0 && h > 0
}

// band is the contract's resolution of a pixel size: its shorter side.
func band(w, h int64) string {
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

// ratio is the contract's ratio nearest to w:h.
func ratio(w, h int64) string {
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
