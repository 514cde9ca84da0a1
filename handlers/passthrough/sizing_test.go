package passthrough

import (
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
)

// TestRouteSizing checks what a routed JSON request says about its size, for its hold (a whole
// number however written), and that a priced field given twice is refused (the upstream would
// read another value).
func TestRouteSizing(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	id := auth.Identity{Account: "a"}
	for _, tc := range []struct {
		path, body string
		want       billing.Request
	}{
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":300}`, billing.Request{MaxOutput: 300}},
		{"/v1/chat/completions", `{"model":"doubao","max_completion_tokens":70}`, billing.Request{MaxOutput: 70}},
		{"/v1/responses", `{"model":"doubao","max_output_tokens":9}`, billing.Request{MaxOutput: 9}},
		{"/v1/messages", `{"model":"doubao","max_tokens":"many"}`, billing.Request{}},
		{"/v1/images/generations", `{"model":"doubao","n":3,"size":"1536x1024","quality":"high"}`,
			billing.Request{Images: true, N: 3, ImageSize: "1536x1024", ImageQuality: "high"}},
		{"/v1/images/generations", `{"model":"doubao"}`, billing.Request{Images: true}},
		// JSON has one kind of number, so 10.0 and 1e1 are 10 to an upstream that does not
		// tell integers from floats (JavaScript's JSON.parse, a lax Python model): n 10.0 is
		// held for 10 images, not the default 1 (its settlement would charge 10 against a hold
		// of 1). A number that is not whole stays absent, for the upstream to refuse.
		{"/v1/images/generations", `{"model":"doubao","n":10.0}`, billing.Request{Images: true, N: 10}},
		{"/v1/images/generations", `{"model":"doubao","n":1e1}`, billing.Request{Images: true, N: 10}},
		{"/v1/images/generations", `{"model":"doubao","n":0.4e1}`, billing.Request{Images: true, N: 4}},
		// A number counts as a float64 reads it, as the most generous common decoder does:
		// 10.0000000000000001 is no whole number read exactly, but JSON.parse and Python's json
		// read 10.0, and a float-reading provider makes 10 images.
		{"/v1/images/generations", `{"model":"doubao","n":10.0000000000000001}`, billing.Request{Images: true, N: 10}},
		{"/v1/images/generations", `{"model":"doubao","n":9.9999999999999999}`, billing.Request{Images: true, N: 10}},
		{"/v1/images/generations", `{"model":"doubao","n":"10.0000000000000001"}`, billing.Request{Images: true, N: 10}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":1e400}`, billing.Request{MaxOutput: math.MaxInt64}},
		{"/v1/images/generations", `{"model":"doubao","n":2.5}`, billing.Request{Images: true}},
		{"/v1/images/generations", `{"model":"doubao","n":-3.0}`, billing.Request{Images: true}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":3e2}`, billing.Request{MaxOutput: 300}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":1e-400}`, billing.Request{}},
		// pydantic's lax mode (vLLM's) reads "+100000" as 100000 (Rust's integer parse takes a sign).
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":"+100000"}`, billing.Request{MaxOutput: 100000}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":" +100_000.0 "}`, billing.Request{MaxOutput: 100000}},
		// A limit of zero or less is passed on, and names no bound (an upstream may read -1 as
		// none, and take it before the other limit): the model's max_output is held, never the
		// positive limit beside it.
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":10,"max_completion_tokens":-1}`, billing.Request{}},
		{"/v1/chat/completions", `{"model":"doubao","max_completion_tokens":10,"max_tokens":0}`, billing.Request{}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":10,"max_completion_tokens":"-5"}`, billing.Request{}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":10,"max_completion_tokens":-0.5}`, billing.Request{}},
		{"/v1/responses", `{"model":"doubao","max_output_tokens":-1}`, billing.Request{}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":10,"max_completion_tokens":null}`, billing.Request{MaxOutput: 10}},
		{"/v1/chat/completions", `{"model":"doubao","max_tokens":10,"max_completion_tokens":"many"}`, billing.Request{MaxOutput: 10}},
		// A Seedream set (sequential_image_generation auto) is held at the images it may make:
		// max_images, else Ark's 15; disabled, or on another endpoint, it is not a set.
		{"/v1/images/generations", `{"model":"doubao","sequential_image_generation":"auto","sequential_image_generation_options":{"max_images":4}}`,
			billing.Request{Images: true, N: 4}},
		{"/v1/images/generations", `{"model":"doubao","sequential_image_generation":"auto"}`, billing.Request{Images: true, N: 15}},
		{"/v1/images/generations", `{"model":"doubao","n":6,"sequential_image_generation":"AUTO","sequential_image_generation_options":{"max_images":"3"}}`,
			billing.Request{Images: true, N: 6}},
		{"/v1/images/generations", `{"model":"doubao","sequential_image_generation":"disabled","sequential_image_generation_options":{"max_images":9}}`,
			billing.Request{Images: true}},
		{"/v1/chat/completions", `{"model":"doubao","sequential_image_generation":"auto"}`, billing.Request{}},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.path, tc.body, err)
		}
		route.Done()
		tc.want.BodyBytes = int64(len(tc.body))
		if route.Sizing != tc.want {
			t.Errorf("%s %s: sizing %+v, want %+v", tc.path, tc.body, route.Sizing, tc.want)
		}
	}
	for _, body := range []string{`{"model":"doubao","max_tokens":1,"max_tokens":100000}`, `{"model":"doubao","n":1,"N":10}`} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, id)
		if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Status != 400 {
			t.Errorf("%s: %v, want 400", body, err)
		}
	}
}

// FuzzSizingValues holds the readers of the priced fields to their slow paths' reading of the
// same (valid) JSON value: a whole number however written (positiveNumber) that is a positive
// int64, or 0; encoding/json's string, or "".
func FuzzSizingValues(f *testing.F) {
	for _, s := range []string{`0`, `7`, `300`, `-1`, `1.5`, `1e3`, `999999999999999999`, `9223372036854775807`,
		`9223372036854775808`, `10.0`, `1e1`, `"high"`, `"a\u0041"`, `null`, `true`, `{}`, `[1]`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		raw := json.RawMessage(value)
		if !json.Valid(raw) {
			return
		}
		if got, want := positiveInt(raw), positiveNumber(raw); got != want {
			t.Errorf("positiveInt(%s) = %d, encoding/json reads %d", value, got, want)
		}
		var want string
		if json.Unmarshal(raw, &want) != nil {
			want = ""
		}
		if got := stringOrEmpty(raw); got != want {
			t.Errorf("stringOrEmpty(%s) = %q, encoding/json reads %q", value, got, want)
		}
	})
}

// TestVideoSizingHoldsEitherSpelling: a video create that names its length or picture in both
// OpenAI's spelling (seconds, size) and the task API's (duration, resolution, ratio) is held at
// the costlier reading, since its provider may follow either; a length of 0 or -1 (the model
// chooses) is held at max_seconds.
func TestVideoSizingHoldsEitherSpelling(t *testing.T) {
	p := &billing.Price{Model: "v", Second: 100_000, SecondBands: map[string]billing.Money{"1080p": 250_000}}
	for _, tc := range []struct {
		body string
		want billing.Money
	}{
		{`{"seconds":"4","size":"1280x720"}`, 400_000},
		{`{"seconds":"4","duration":12}`, 1_200_000},
		{`{"duration":12,"seconds":"4"}`, 1_200_000},
		{`{"duration":-1}`, 1_500_000},
		{`{"seconds":"0"}`, 1_500_000},
		{`{"seconds":"8","duration":-1}`, 1_500_000},
		{`{"seconds":"20","duration":-1}`, 2_000_000},
		{`{"seconds":"8","size":"1280x720","resolution":"1080p"}`, 2_000_000},
		{`{"seconds":"8","size":"1920x1080","resolution":"480p"}`, 2_000_000},
		// An OpenAI-style video generation's width and height are a size; one side alone is
		// held as a square of it.
		{`{"seconds":"8","width":1920,"height":1080}`, 2_000_000},
		{`{"width":"1920","height":"1080"}`, 1_250_000},
		{`{"width":1280,"height":720}`, 500_000},
		{`{"size":"1280x720","width":1920,"height":1080}`, 1_250_000},
		{`{"height":1080}`, 1_250_000},
		// Three readings: the costliest of them is held, whichever order names them.
		{`{"size":"1280x720","width":1920,"height":1080,"resolution":"480p"}`, 1_250_000},
		{`{"resolution":"480p","size":"1920x1080","width":1280,"height":720}`, 1_250_000},
	} {
		fields, err := readFields([]byte(tc.body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.EstimateVideo(*videoSizing(jsonVideoValue(&fields))).Amount; got != tc.want {
			t.Errorf("%s: held %d, want %d", tc.body, got, tc.want)
		}
	}
	// A length beside -1 is held when it is longer than the price's max_seconds, and the
	// max_seconds when that is longer.
	short := &billing.Price{Model: "v", Second: 100_000, MaxSeconds: 8}
	for body, want := range map[string]billing.Money{`{"seconds":"12","duration":-1}`: 1_200_000, `{"duration":-1,"seconds":"4"}`: 800_000} {
		fields, err := readFields([]byte(body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if got := short.EstimateVideo(*videoSizing(jsonVideoValue(&fields))).Amount; got != want {
			t.Errorf("%s at max_seconds 8: held %d, want %d", body, got, want)
		}
	}
}

// TestVideoSizingHoldsFrames: the task API's frames win over its duration, so a create that
// names frames longer than its length is held for the frames (24 a second).
func TestVideoSizingHoldsFrames(t *testing.T) {
	p := &billing.Price{Model: "v", Second: 100_000}
	for _, tc := range []struct {
		body string
		want billing.Money
	}{
		{`{"duration":2,"frames":289}`, 1_204_167}, // 289 / 24 s
		{`{"frames":289}`, 1_204_167},
		{`{"duration":12,"frames":29}`, 1_200_000},
		{`{"duration":-1,"frames":289}`, 1_500_000},
		{`{"duration":20,"frames":289}`, 2_000_000},
	} {
		fields, err := readFields([]byte(tc.body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.EstimateVideo(*videoSizing(jsonVideoValue(&fields))).Amount; got != tc.want {
			t.Errorf("%s: held %d, want %d", tc.body, got, tc.want)
		}
	}
}

// TestVideoSizingReadsOtherSpellings: a size written with * (DashScope's 1920*1080) or X is read
// as 1920x1080, and aspect_ratio as the ratio, so that neither is held at the defaults.
func TestVideoSizingReadsOtherSpellings(t *testing.T) {
	for _, tc := range []struct {
		body              string
		resolution, ratio string
	}{
		{`{"size":"1920*1080"}`, "1080p", "16:9"},
		{`{"size":"1080X1920"}`, "1080p", "9:16"},
		{`{"aspect_ratio":"21:9"}`, "", "21:9"},
		{`{"size":"1280x720","aspect_ratio":"21:9"}`, "720p", billing.AdaptiveRatio},
		{`{"size":"1280x720","aspect_ratio":"16:9"}`, "720p", "16:9"},
	} {
		fields, err := readFields([]byte(tc.body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		got := videoSizing(jsonVideoValue(&fields))
		if got.Resolution != tc.resolution || got.Ratio != tc.ratio {
			t.Errorf("%s: %q %q, want %q %q", tc.body, got.Resolution, got.Ratio, tc.resolution, tc.ratio)
		}
	}
}

// TestResolutionBand: a resolution written as a number of lines is held at its band, not at a
// price's plain second (which a resolution no band names costs).
func TestResolutionBand(t *testing.T) {
	for in, want := range map[string]string{"1080P": "1080p", "1080": "1080p", "2160p": "4k", "768P": "720p",
		"480p": "480p", "4K": "4k", "HD": "hd", "0p": "0p"} {
		if got := resolutionBand(in); got != want {
			t.Errorf("resolutionBand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVideoSizingReadsLaxLengths: a length written as a lax upstream reads it (" 12 ", "12.0",
// "1.2e1") is held as 12 seconds, not as the default 5.
func TestVideoSizingReadsLaxLengths(t *testing.T) {
	for _, body := range []string{`{"seconds":" 12 "}`, `{"seconds":"12.0"}`, `{"duration":"1.2e1"}`, `{"seconds":"012"}`} {
		fields, err := readFields([]byte(body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if d := videoSizing(jsonVideoValue(&fields)).Duration; d == nil || *d != 12 {
			t.Errorf("%s: duration %v, want 12", body, d)
		}
	}
}

// TestVideoSizingCeilsFractions: a length with a fraction, as a JSON number or a string, is
// held as its ceiling (5.5 as 6 s), never as the default 5 or below it; one past an int64 as the
// largest; frames with a fraction likewise. NaN and the infinities do not read (the upstream
// refuses them).
func TestVideoSizingCeilsFractions(t *testing.T) {
	for body, want := range map[string]int64{
		`{"duration":5.5}`:               6,
		`{"duration":5.01}`:              6,
		`{"seconds":"5.5"}`:              6,
		`{"seconds":" 11.2 "}`:           12,
		`{"duration":1.5e1}`:             15,
		`{"duration":-0.5}`:              0,
		`{"duration":1e30}`:              math.MaxInt64,
		`{"seconds":"1e400"}`:            math.MaxInt64,
		`{"duration":4,"seconds":"4.5"}`: 5,
	} {
		fields, err := readFields([]byte(body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if d := videoSizing(jsonVideoValue(&fields)).Duration; d == nil || *d != want {
			t.Errorf("%s: duration %v, want %d", body, d, want)
		}
	}
	for _, body := range []string{`{"seconds":"NaN"}`, `{"seconds":"Inf"}`, `{"seconds":"-Infinity"}`, `{"seconds":"5.5s"}`} {
		fields, err := readFields([]byte(body), videoPricedFields)
		if err != nil {
			t.Fatal(err)
		}
		if d := videoSizing(jsonVideoValue(&fields)).Duration; d != nil {
			t.Errorf("%s: duration %d, want none", body, *d)
		}
	}
	fields, err := readFields([]byte(`{"duration":2,"frames":240.5}`), videoPricedFields)
	if err != nil {
		t.Fatal(err)
	}
	if got := videoSizing(jsonVideoValue(&fields)); got.Frames != 241 {
		t.Errorf("frames 240.5: held %+v, want 241 frames", got)
	}
}

// TestFramesSeconds: frames fill whole seconds at 24 a second, a part of one counted as one,
// and the largest count does not wrap to a negative length.
func TestFramesSeconds(t *testing.T) {
	for frames, want := range map[int64]int64{1: 1, 24: 1, 25: 2, 289: 13, math.MaxInt64: math.MaxInt64/24 + 1} {
		if got := framesSeconds(frames); got != want {
			t.Errorf("framesSeconds(%d) = %d, want %d", frames, got, want)
		}
	}
}

// TestVideoCreateCountsOneVideo: a video create is held and charged as one video, so one that
// asks for more (n, in a JSON body or a form, however written) is refused naming n; n 1 passes.
func TestVideoCreateCountsOneVideo(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for body, param := range map[string]string{
		`{"model":"doubao","prompt":"a cat","n":4}`:                    "n",
		`{"model":"doubao","prompt":"a cat","n":"2"}`:                  "n",
		`{"model":"doubao","prompt":"a cat","n":1.0000000000000001e1}`: "n",
		`{"model":"doubao","prompt":"a cat","n":1}`:                    "",
		`{"model":"doubao","prompt":"a cat"}`:                          "",
	} {
		checkRoute(t, rt, "/v1/video/generations", body, param)
	}
	checkRoute(t, rt, "/v1/videos", `{"model":"doubao","n":3}`, "n")
	part := func(name, value string) string {
		return "Content-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value
	}
	checkForm(t, rt, "/v1/videos", "a form's n 2", "n", part("model", "doubao"), part("n", "2"))
	checkForm(t, rt, "/v1/videos", "a form's n 1", "", part("model", "doubao"), part("n", "1"))
}
