package dashscope

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// sizes are the text-to-video pixel sizes (parameters.size, "width*height") that DashScope's
// reference lists, by the contract's resolution and ratio.
var sizes = map[string]map[string]string{
	"480p": {"16:9": "832*480", "9:16": "480*832", "1:1": "624*624"},
	"720p": {"16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088"},
	"1080p": {"16:9": "1920*1080", "9:16": "1080*1920", "1:1": "1440*1440", "4:3": "1632*1248",
		"3:4": "1248*1632"},
}

// allTiers are the resolutions a Wan model is taken to offer when tiers does not name it.
var allTiers = []string{"480p", "720p", "1080p"}

// tiers are the resolutions each Wan model offers, as DashScope's reference lists them (the
// older "wanx" spelling of an id is the same model). A model not listed is taken to offer
// allTiers.
var tiers = map[string][]string{
	"wan2.6-t2v":         {"720p", "1080p"},
	"wan2.5-t2v-preview": {"480p", "720p", "1080p"},
	"wan2.2-t2v-plus":    {"480p", "1080p"},
	"wan2.1-t2v-turbo":   {"480p", "720p"},
	"wan2.1-t2v-plus":    {"720p"},
	"wan2.6-i2v":         {"720p", "1080p"},
	"wan2.5-i2v-preview": {"480p", "720p", "1080p"},
	"wan2.2-i2v-flash":   {"480p", "720p", "1080p"},
	"wan2.2-i2v-plus":    {"480p", "1080p"},
	"wan2.1-i2v-turbo":   {"480p", "720p"},
	"wan2.1-i2v-plus":    {"720p"},
	"wan2.2-kf2v-flash":  {"480p", "720p", "1080p"},
	"wan2.1-kf2v-plus":   {"720p"},
}

// tierOf is the resolution a task of r is made at: the one asked for (the contract's default
// 720p when none is) where the model offers it, else the model's tier nearest to it by
// proportion, the higher of two equally near (720p on a model of 480P and 1080P is 1080p: never a
// smaller picture than asked for only because of a tie). A resolution the contract names but
// Wan lacks (4k) is its nearest tier too: the model's highest.
func tierOf(r adaptor.Request) string {
	asked := cmp.Or(strings.ToLower(r.Resolution), billing.DefaultResolution)
	offered, ok := tiers[strings.Replace(r.Model, "wanx", "wan", 1)]
	if !ok {
		offered = allTiers
	}
	if slices.Contains(offered, asked) {
		return asked
	}
	side := shortSideOf(asked)
	best := offered[0]
	for _, t := range offered[1:] {
		if nearer(side, shortSideOf(t), shortSideOf(best)) {
			best = t
		}
	}
	return best
}

// shortSideOf is the short side of a contract resolution in pixels (4k's 2160; the default
// 720p's for one the contract does not name).
func shortSideOf(resolution string) int64 {
	for _, r := range adaptor.Resolutions {
		if r.Name == resolution {
			return r.Side
		}
	}
	return shortSideOf(billing.DefaultResolution)
}

// nearer reports whether side a is at least as near to want as side b by proportion, and the
// larger on a tie: a/want against want/b compared in whole numbers (a*b against want²), so that
// a tie is exact.
func nearer(want, a, b int64) bool {
	lo, hi := min(a, b), max(a, b)
	if want <= lo {
		return a == lo
	}
	if want >= hi {
		return a == hi
	}
	// lo < want < hi: hi is at least as near as lo when hi/want <= want/lo.
	return (hi*lo <= want*want) == (a == hi)
}

// pixelSize is the text-to-video size of a tier and ratio; a ratio the tier has no size for
// (adaptive, 21:9, or 4:3 at 480p) is its 16:9 size.
func pixelSize(tier, ratio string) string {
	if s, ok := sizes[tier][ratio]; ok {
		return s
	}
	return sizes[tier]["16:9"]
}
