package passthrough

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// videoPricedFields are the fields of a video create that its hold depends on: OpenAI's
// seconds and size (POST /v1/videos), and the task API's duration, resolution and ratio, which
// other providers' video generations take. Like pricedFields they are read under jsonkeys' rule
// in a JSON body, and a form may carry each once, so that what the upstream reads is what was
// priced.
var videoPricedFields = []string{"seconds", "duration", "size", "resolution", "ratio"}

// createsVideo reports whether ep creates a video, whose hold is a video task's.
func createsVideo(ep Endpoint) bool {
	return ep.Creates == KindVideo || ep.Creates == KindVideoGeneration
}

// videoSizing is the video task a create's fields ask for (see billing.VideoTask): its length
// from seconds (a string such as "8", or an integer) or duration, its picture from size
// ("1280x720", mapped as the video front maps it) or resolution and ratio. A value that does not
// read counts as absent (the contract's default: 5 s, 720p, 16:9); the upstream refuses it.
func videoSizing(value func(name string) (string, bool)) *billing.VideoTask {
	t := &billing.VideoTask{}
	for _, name := range []string{"seconds", "duration"} {
		if v, ok := value(name); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				t.Duration = &n
				break
			}
		}
	}
	if size, ok := value("size"); ok {
		ws, hs, _ := strings.Cut(size, "x")
		w, errW := strconv.ParseInt(ws, 10, 64)
		h, errH := strconv.ParseInt(hs, 10, 64)
		if errW == nil && errH == nil && w > 0 && h > 0 {
			t.Resolution, t.Ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
		}
	}
	if r, ok := value("resolution"); ok && t.Resolution == "" && r != "" {
		t.Resolution = strings.ToLower(r) // one no band names is held at the highest (see billing.Price)
	}
	if r, ok := value("ratio"); ok && t.Ratio == "" {
		t.Ratio = r // an unknown ratio is held at the resolution's largest (see billing.sizeOf)
	}
	return t
}

// jsonVideoValue reads a video field of a JSON body as text: a string's content, or a number's
// digits.
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
		if n := positiveInt(raw); n > 0 {
			return strconv.FormatInt(n, 10), true
		}
		return "", false
	}
}
