package passthrough

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// videoPricedFields are the fields of a video create that its hold depends on: OpenAI's
// seconds and size (POST /v1/videos), and the task API's duration, frames, resolution and
// ratio (or aspect_ratio), which other providers' video generations take. Like pricedFields
// they are read under jsonkeys' rule in a JSON body, and a form may carry each once, so that
// what the upstream reads is what was priced.
//
// width and height are the picture of OpenAI-style video generations (POST /v1/video/generations
// of relays such as new-api): held as a size of width × height.
var videoPricedFields = []string{"seconds", "duration", "frames", "size", "width", "height", "resolution", "ratio", "aspect_ratio"}

// videoFormFields are the form parts of a video create read for its hold: videoPricedFields and
// n, the number of videos (see oneVideo), which a JSON body's pricedFields have already.
var videoFormFields = append(append([]string(nil), videoPricedFields...), "n")

// errVideoCount refuses a video create that asks for more than one video: its hold and its
// settlement count one video (a pass-through video's record follows one), so n videos would be
// charged as one.
var errVideoCount = apierror.New(http.StatusBadRequest, "invalid_request_body",
	"n must be 1 or left out: the gateway holds and charges one video per create; send one create for each video").WithParam("n")

// oneVideo refuses a video create whose n, read as lengths are (a string or a number, a
// fraction counting as its ceiling), is more than 1: a provider that makes n videos would be
// paid for one.
func oneVideo(value func(name string) (string, bool)) error {
	if v, ok := value("n"); ok {
		if n, ok := lengthOf(v); ok && n > 1 {
			return errVideoCount
		}
	}
	return nil
}

// createsVideo reports whether ep creates a video, whose hold is a video task's.
func createsVideo(ep Endpoint) bool {
	return ep.Creates == KindVideo || ep.Creates == KindVideoGeneration
}

// videoSizing is the video task a create's fields ask for (see billing.VideoTask): its length
// from seconds (a string such as "8", or an integer) or duration, its picture from size
// ("1280x720", mapped as the video front maps it) or resolution and ratio. A length with a
// fraction (5.5) counts as its ceiling (6 s), so that it is never held below what an upstream
// that rounds it up makes. A value that does not read counts as absent (the contract's default:
// 5 s, 720p, 16:9); the upstream refuses it. A
// length of 0 or less (Ark's -1: the model chooses) is held as the task API holds it, at the
// price's max_seconds; frames (24 a second) when they are longer than the length named.
//
// A body may name both spellings, and the gateway cannot know which one its provider follows
// (OpenAI reads seconds and size, the task API's providers duration, resolution and ratio): the
// longer length is held, the costlier of the size's resolution and the resolution named, and a
// ratio other than the size's counts as not known (the ratio with the most pixels), so that the
// hold, which a pass-through create is charged, is an upper bound of either reading.
func videoSizing(value func(name string) (string, bool)) *billing.VideoTask {
	t := &billing.VideoTask{}
	for _, name := range []string{"seconds", "duration"} {
		v, ok := value(name)
		if !ok {
			continue
		}
		n, ok := lengthOf(v)
		switch {
		case !ok:
		case t.Duration == nil:
			t.Duration = &n
		case n <= 0 || *t.Duration <= 0:
			// One says the model chooses (held at the price's max_seconds), the other a length:
			// held at the longer of the two (billing.Price.EstimateVideo).
			t.Planned.Seconds = max(*t.Duration, n)
			chosen := int64(-1)
			t.Duration = &chosen
		case n > *t.Duration:
			t.Duration = &n
		}
	}
	if v, ok := value("frames"); ok {
		// The task API's frames win over its duration (at 24 fps); held when they are longer
		// than the length named, which a provider that reads duration alone makes.
		n, ok := lengthOf(v)
		seconds := int64(billing.DefaultDuration)
		if t.Duration != nil {
			seconds = *t.Duration
		}
		if ok && seconds > 0 && framesSeconds(n) > seconds {
			t.Frames = n
		}
	}
	if size, ok := value("size"); ok {
		// 1280x720, and as other providers write it (DashScope's 1280*720): a size that does not
		// read would be held at the default 720p.
		ws, hs, _ := strings.Cut(strings.NewReplacer("X", "x", "*", "x").Replace(size), "x")
		w, errW := strconv.ParseInt(ws, 10, 64)
		h, errH := strconv.ParseInt(hs, 10, 64)
		if errW == nil && errH == nil && w > 0 && h > 0 {
			t.Resolution, t.Ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
		}
	}
	if w, h := side(value, "width"), side(value, "height"); w > 0 || h > 0 {
		// The picture as width and height: a size of them. One side alone is held as a square
		// of it, at least the band of the picture its provider makes from it.
		band, ratio := adaptor.Band(max(w, h), max(w, h)), ""
		if w > 0 && h > 0 {
			band, ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
		}
		if t.Resolution == "" {
			t.Ratio = ratio
		}
		addResolution(t, band)
		if ratio != "" && t.Ratio != "" && ratio != t.Ratio {
			t.Ratio = billing.AdaptiveRatio // two ratios: held at the one with the most pixels
		}
	}
	if r, ok := value("resolution"); ok && r != "" {
		r = resolutionBand(r) // one no band names is held at the highest (see billing.Price)
		addResolution(t, r)
	}
	for _, name := range []string{"ratio", "aspect_ratio"} { // the task API's, and others' spelling
		if r, ok := value(name); ok && r != t.Ratio {
			if t.Ratio != "" {
				r = billing.AdaptiveRatio // two ratios: held at the one with the most pixels
			}
			t.Ratio = r // an unknown ratio is held at the resolution's largest (see billing.sizeOf)
		}
	}
	return t
}

// addResolution adds a resolution that a create names (by size, width and height, or
// resolution) to those t is held for: the first is t's Resolution; another is its Planned one,
// and the hold is at the costlier of the two (billing.Price.EstimateVideo). Of a third, Planned
// keeps the higher band (one no band names counts as the highest, as a price holds it), so that
// no reading a provider may follow is held below what it makes.
func addResolution(t *billing.VideoTask, r string) {
	switch {
	case t.Resolution == "":
		t.Resolution = r
	case r == t.Resolution || r == t.Planned.Resolution:
	case t.Planned.Resolution == "" || bandRank(r) > bandRank(t.Planned.Resolution):
		t.Planned.Resolution = r
	}
}

// bandRank orders the contract's resolutions from the smallest; one no band names ranks above
// them all.
func bandRank(r string) int {
	for i, band := range adaptor.Resolutions {
		if band.Name == r {
			return i
		}
	}
	return len(adaptor.Resolutions)
}

// side is a width or height a create names, as a positive number of pixels (a fraction counts
// as its ceiling), or 0.
func side(value func(name string) (string, bool), name string) int64 {
	v, ok := value(name)
	if !ok {
		return 0
	}
	n, ok := lengthOf(v)
	if !ok || n <= 0 {
		return 0
	}
	return min(n, maxSide) // no band or ratio changes past it, and w × h stays within an int64
}

// maxSide bounds a width or height read for a hold: far past 4k.
const maxSide = 1 << 20

// framesSeconds is the seconds that frames fill at 24 a second, rounded up (a part of a second
// is held as one), without overflow.
func framesSeconds(frames int64) int64 {
	return frames/billing.DefaultFPS + min(frames%billing.DefaultFPS, 1)
}

// resolutionBand is a resolution as a create names it, as the contract's band: "1080P", "1080"
// and "1080p" are 1080p, "2160p" is 4k, "768P" (Hailuo's) 720p, as a size of that short side
// maps (adaptor.Band). Anything else is kept in lower case: a price holds a resolution no band
// names at its plain second, else its highest band.
func resolutionBand(r string) string {
	r = strings.ToLower(strings.TrimSpace(r))
	if n, err := strconv.ParseInt(strings.TrimSuffix(r, "p"), 10, 64); err == nil && n > 0 {
		return adaptor.Band(n, n)
	}
	return r
}

// lengthOf reads a length (seconds or frames) as an upstream that coerces text may: digits with a
// sign, around white space ("8", " 8 ", "-1"), a whole number however JSON writes it ("8.0",
// "1e1"), or a number with a fraction ("5.5", "-0.5"), which counts as its ceiling (6, 0) so that
// the hold is never below what an upstream that rounds it up makes. One past an int64 is the
// largest (its hold saturates: no balance covers it); NaN and the infinities do not read.
func lengthOf(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, true
	}
	if n, ok := jsonkeys.Integer([]byte(v)); ok {
		return n, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) || math.IsInf(f, 0) && err == nil {
		return 0, false
	}
	switch c := math.Ceil(f); {
	case c >= math.MaxInt64: // 2^63, as a float64: no int64 is that large
		return math.MaxInt64, true
	case c <= math.MinInt64:
		return math.MinInt64, true
	default:
		return int64(c), true
	}
}

// jsonVideoValue reads a video field of a JSON body as text: a string's content, a whole number's
// digits, or another number as written (5.5: lengthOf counts its ceiling).
func jsonVideoValue(fields *bodyFields) func(string) (string, bool) {
	return func(name string) (string, bool) {
		raw := fields.value(name)
		if raw == nil {
			return "", false
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
		if n, ok := jsonkeys.Integer(raw); ok { // -1 too: the model chooses
			return strconv.FormatInt(n, 10), true
		}
		if num := bytes.TrimSpace(raw); len(num) > 0 && (num[0] == '-' || num[0] >= '0' && num[0] <= '9') {
			return string(num), true // a number of a JSON body that parsed: a fraction, or past int64
		}
		return "", false
	}
}
