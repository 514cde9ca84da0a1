package videotask

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

const okText = `{"type":"text","text":"a cat surfing"}`

func body(extra string, content ...string) string {
	if len(content) == 0 {
		content = []string{okText}
	}
	b := `{"model":"m","content":[` + strings.Join(content, ",") + `]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func TestParseCreate(t *testing.T) {
	img := func(url string) string { return `{"type":"image_url","image_url":{"url":"` + url + `"}}` }
	imgRole := func(role string) string {
		return `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"` + role + `"}`
	}
	video := `{"type":"video_url","video_url":{"url":"https://cdn.example.com/a.mp4"},"role":"reference_video"}`
	audio := `{"type":"audio_url","audio_url":{"url":"https://cdn.example.com/a.mp3"},"role":"reference_audio"}`
	for _, tc := range []struct {
		name, body string
		code       string // "" means valid
		param      string
	}{
		{"minimal", body(""), "", ""},
		{"every optional field", body(`"callback_url":"https://hooks.example.com/x","return_last_frame":true,"service_tier":"flex","execution_expires_after":3600,"generate_audio":false,"draft":true,"resolution":"1080p","ratio":"adaptive","duration":-1,"frames":29,"seed":4294967295,"camera_fixed":true,"watermark":false,"safety_identifier":"u1","priority":3,"tools":[{"type":"web_search"}]`), "", ""},
		{"unknown fields pass", body(`"future_field":{"x":1}`), "", ""},
		{"nulls are absent", body(`"seed":null,"ratio":null,"callback_url":null`), "", ""},
		{"integral float", body(`"duration":5.0`), "", ""},
		{"text item carrying a draft", body("", `{"type":"text","text":"x","draft_task":{"id":"cgt-other"}}`), "invalid_request", "content[0].draft_task"},
		{"text item carrying an image", body("", `{"type":"text","text":"x","image_url":{"url":"http://10.0.0.1/a.png"}}`), "invalid_request", "content[0].image_url"},
		{"image item carrying a video", body("", okText, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"video_url":{"url":"file:///etc/passwd"}}`), "invalid_request", "content[1].video_url"},
		{"other types' data empty", body("", `{"type":"text","text":"x","image_url":null,"video_url":{},"draft_task":{ }}`, `{"type":"image_url","text":"","image_url":{"url":"https://cdn.example.com/a.png"}}`), "", ""},
		{"callback URL signed by its receiver", body(`"callback_url":"https://hooks.example.com/cb?Signature=abc&token=t"`), "", ""},
		{"GCS signed reference", body("", okText, img("https://storage.googleapis.com/b/k.png?X-Goog-Signature=abc")), "invalid_request", "content[1].image_url.url"},
		{"image and text", body("", okText, img("https://cdn.example.com/a.png")), "", ""},
		{"audio with video", body("", okText, video, audio), "", ""},
		{"first and last frame", body("", okText, imgRole("first_frame"), imgRole("last_frame")), "", ""},
		{"draft task", body("", okText, `{"type":"draft_task","draft_task":{"id":"cgt-1"}}`), "", ""},

		{"not JSON", `{"model":`, "invalid_request", ""},
		{"JSON array", `[]`, "invalid_request", ""},
		{"JSON null", `null`, "invalid_request", ""},
		{"missing model", `{"content":[` + okText + `]}`, "missing_model", "model"},
		{"empty model", `{"model":"","content":[` + okText + `]}`, "missing_model", "model"},
		{"null model", `{"model":null,"content":[` + okText + `]}`, "missing_model", "model"},
		{"model not a string", `{"model":7,"content":[` + okText + `]}`, "invalid_request", "model"},
		{"missing content", `{"model":"m"}`, "invalid_request", "content"},
		{"content not array", `{"model":"m","content":{}}`, "invalid_request", "content"},
		{"empty content", `{"model":"m","content":[]}`, "invalid_request", "content"},
		{"item not object", body("", `"text"`), "invalid_request", "content[0]"},
		{"item without type", body("", `{"text":"x"}`), "invalid_request", "content[0].type"},
		{"unknown type", body("", okText, `{"type":"pdf_url"}`), "unsupported_content_type", "content[1].type"},
		{"no text item", body("", img("https://cdn.example.com/a.png")), "invalid_request", "content"},
		{"empty text", body("", `{"type":"text","text":""}`), "invalid_request", "content[0].text"},
		{"blank text", body("", `{"type":"text","text":"  \n"}`), "invalid_request", "content[0].text"},
		{"text not string", body("", `{"type":"text","text":1}`), "invalid_request", "content[0].text"},
		{"empty media URL", body("", okText, img("")), "invalid_request", "content[1].image_url.url"},
		{"missing media object", body("", okText, `{"type":"video_url"}`), "invalid_request", "content[1].video_url.url"},
		{"local path", body("", okText, img("/home/me/cat.png")), "invalid_request", "content[1].image_url.url"},
		{"file URL", body("", okText, img("file:///etc/passwd")), "invalid_request", "content[1].image_url.url"},
		{"data URL", body("", okText, img("data:image/png;base64,iVBORw0KGgo=")), "invalid_request", "content[1].image_url.url"},
		{"bare base64", body("", okText, img("iVBORw0KGgoAAAANSUhEUg")), "invalid_request", "content[1].image_url.url"},
		{"presigned URL", body("", okText, img("https://s3.example.com/b/k.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a&X-Amz-Signature=b")), "invalid_request", "content[1].image_url.url"},
		{"private address", body("", okText, img("http://10.0.0.5/cat.png")), "invalid_request", "content[1].image_url.url"},
		{"loopback v6", body("", okText, img("http://[::1]:8080/cat.png")), "invalid_request", "content[1].image_url.url"},
		{"metadata address", body("", okText, img("http://169.254.169.254/latest/meta-data")), "invalid_request", "content[1].image_url.url"},
		{"localhost", body("", okText, img("http://localhost/cat.png")), "invalid_request", "content[1].image_url.url"},
		{"internal name", body("", okText, img("https://bucket.svc.internal/cat.png")), "invalid_request", "content[1].image_url.url"},
		{"audio alone", body("", okText, audio), "invalid_request", "content"},
		{"modes mixed", body("", okText, imgRole("first_frame"), imgRole("reference_image")), "invalid_request", "content"},
		// A provider that reads roles without regard to case or space would mix the modes.
		{"role in another case", body("", okText, imgRole("FIRST_FRAME"), imgRole("reference_image")), "invalid_request", "content[1].role"},
		{"role with a space", body("", okText, imgRole("first_frame "), imgRole("reference_image")), "invalid_request", "content[1].role"},
		{"unknown role passes", body("", okText, imgRole("style_reference")), "", ""},
		{"role on wrong type", body("", okText, `{"type":"video_url","video_url":{"url":"https://c.example.com/v.mp4"},"role":"first_frame"}`), "invalid_request", "content[1].role"},
		{"two draft tasks", body("", okText, `{"type":"draft_task","draft_task":{"id":"cgt-1"}}`, `{"type":"draft_task","draft_task":{"id":"cgt-2"}}`), "invalid_request", "content[2]"},
		{"64 content items", body("", repeatItem(okText, MaxContentItems)...), "", ""},
		{"65 content items", body("", repeatItem(okText, MaxContentItems+1)...), "invalid_request", "content"},
		{"empty draft id", body("", okText, `{"type":"draft_task","draft_task":{"id":""}}`), "invalid_request", "content[1].draft_task.id"},
		{"callback not URL", body(`"callback_url":"ftp://x"`), "invalid_request", "callback_url"},
		{"bool as string", body(`"watermark":"yes"`), "invalid_request", "watermark"},
		{"bad service tier", body(`"service_tier":"cheap"`), "invalid_request", "service_tier"},
		{"bad resolution", body(`"resolution":"720"`), "invalid_request", "resolution"},
		{"bad ratio", body(`"ratio":"2:1"`), "invalid_request", "ratio"},
		{"expires too short", body(`"execution_expires_after":3599`), "invalid_request", "execution_expires_after"},
		{"expires too long", body(`"execution_expires_after":259201`), "invalid_request", "execution_expires_after"},
		{"duration too long", body(`"duration":16`), "invalid_request", "duration"},
		{"duration too low", body(`"duration":-2`), "invalid_request", "duration"},
		{"duration fractional", body(`"duration":5.5`), "invalid_request", "duration"},
		{"duration as string", body(`"duration":"5"`), "invalid_request", "duration"},
		{"frames not 25+4n", body(`"frames":30`), "invalid_request", "frames"},
		{"frames too many", body(`"frames":293`), "invalid_request", "frames"},
		{"frames too few", body(`"frames":25`), "invalid_request", "frames"},
		{"seed too big", body(`"seed":4294967296`), "invalid_request", "seed"},
		{"seed too small", body(`"seed":-2`), "invalid_request", "seed"},
		{"tools not objects", body(`"tools":[1]`), "invalid_request", "tools"},
		{"tool null", body(`"tools":[null]`), "invalid_request", "tools[0]"},
		{"safety id not string", body(`"safety_identifier":5`), "invalid_request", "safety_identifier"},
		{"model smuggled by case", body(`"Model":"other"`), "invalid_request", "model"},
		{"model smuggled in capitals", `{"MODEL":"other","model":"m","content":[` + okText + `]}`, "invalid_request", "model"},
		{"model repeated", body(`"model":"other"`), "invalid_request", "model"},
		{"model repeated through an escape", body(`"mod\u0065l":"other"`), "invalid_request", "model"},
		{"callback smuggled by case", body(`"Callback_URL":"http://10.0.0.1/"`), "invalid_request", "callback_url"},
		{"unknown key repeated", body(`"x":1,"x":2`), "invalid_request", "x"},
		{"media URL smuggled by case", body("", okText, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","URL":"http://10.0.0.1/"}}`), "invalid_request", "content[1].image_url.url"},
		{"item type repeated", body("", okText, `{"type":"text","type":"image_url","text":"x"}`), "invalid_request", "content[1].type"},
		{"draft id by case", body("", okText, `{"type":"draft_task","draft_task":{"id":"cgt-1","ID":"cgt-2"}}`), "invalid_request", "content[1].draft_task.id"},
		// URLs in fields the gateway forwards unread must be public ones (media.Unread).
		{"public URLs in unknown fields", body(`"extra":{"refs":[{"src":"https://cdn.example.com/b.png"}]}`, okText, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","detail":"https://cdn.example.com/c.png"},"weight":"high"}`), "", ""},
		{"URL text in the prompt", body("", `{"type":"text","text":"http://10.0.0.1/ in the style of https://example.com"}`), "", ""},
		{"metadata address in an unknown field", body(`"image":"http://169.254.169.254/latest/meta-data/"`), "invalid_request", "image"},
		{"private address at depth", body(`"extra":{"refs":[{"src":"https://cdn.example.com/b.png"},{"src":"http://10.0.0.1/"}]}`), "invalid_request", "extra.refs[1].src"},
		{"localhost beside a checked item URL", body("", okText, `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png","fallback":"http://localhost/a.png"}}`), "invalid_request", "content[1].image_url.fallback"},
		{"private address beside an item", body("", okText, `{"type":"video_url","video_url":{"url":"https://cdn.example.com/a.mp4"},"url":"http://10.0.0.1/"}`), "invalid_request", "content[1].url"},
		{"private address in a text item", body("", `{"type":"text","text":"x","source":["http://192.168.0.1/"]}`), "invalid_request", "content[0].source[0]"},
		{"presigned S3 in a draft object", body("", okText, `{"type":"draft_task","draft_task":{"id":"cgt-1","video":"https://b.s3.amazonaws.com/k?X-Amz-Signature=abc"}}`), "invalid_request", "content[1].draft_task.video"},
		{"presigned GCS in a tool", body(`"tools":[{"type":"web_search","seed_urls":["https://storage.googleapis.com/b/k?X-Goog-Signature=abc"]}]`), "invalid_request", "tools[0].seed_urls[0]"},
		{"data URL in an unknown field", body(`"mask":"data:image/png;base64,AAAA"`), "invalid_request", "mask"},
		{"file URL in an unknown field", body(`"ref":{"u":"file:///etc/passwd"}`), "invalid_request", "ref.u"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseCreate([]byte(tc.body))
			if tc.code == "" {
				if err != nil {
					t.Fatalf("valid body refused: %v", err)
				}
				if req.Model != "m" || len(req.Forward) == 0 {
					t.Fatalf("parsed %+v", req)
				}
				return
			}
			var e *apierror.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
			if e.Status != 400 || e.Code != tc.code || e.Param != tc.param {
				t.Fatalf("got %d %s param %q (%s), want 400 %s param %q", e.Status, e.Code, e.Param, e.Message, tc.code, tc.param)
			}
			if tc.param != "" && !strings.Contains(e.Message, tc.param) {
				t.Fatalf("message %q does not name %s", e.Message, tc.param)
			}
		})
	}
}

func TestParseCreateForwarding(t *testing.T) {
	plain := body(`"future_field":{"x":1}`)
	req, err := ParseCreate([]byte(plain))
	if err != nil || string(req.Forward) != plain {
		t.Fatalf("a body without callback_url must be forwarded byte for byte: %s, %v", req.Forward, err)
	}
	req, err = ParseCreate([]byte(body(`"callback_url":"https://hooks.example.com/cb","future_field":[1,2]`)))
	if err != nil {
		t.Fatal(err)
	}
	var fwd map[string]json.RawMessage
	if err := json.Unmarshal(req.Forward, &fwd); err != nil {
		t.Fatal(err)
	}
	if _, ok := fwd["callback_url"]; ok || string(fwd["future_field"]) != "[1,2]" || req.CallbackURL != "https://hooks.example.com/cb" {
		t.Fatalf("forwarded %s, callback %q", req.Forward, req.CallbackURL)
	}
}

// An integer written as 5.0 or 1e1 passes the check as the integer it is, and the upstream gets
// that integer (a provider that decodes into an int refuses "5.0"); plain integers are forwarded
// byte for byte.
func TestParseCreateForwardsCheckedIntegers(t *testing.T) {
	req, err := ParseCreate([]byte(body(`"duration":5.0,"frames":2.9e1,"seed":-0,"execution_expires_after":3600,"future":1.5`)))
	if err != nil {
		t.Fatal(err)
	}
	var fwd map[string]json.RawMessage
	if err := json.Unmarshal(req.Forward, &fwd); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"duration": "5", "frames": "29", "seed": "0", "execution_expires_after": "3600", "future": "1.5"} {
		if got := string(fwd[name]); got != want {
			t.Errorf("forwarded %s = %s, want %s (body %s)", name, got, want, req.Forward)
		}
	}
	plain := body(`"duration":5,"seed":42`)
	if req, err := ParseCreate([]byte(plain)); err != nil || string(req.Forward) != plain {
		t.Fatalf("plain integers must be forwarded byte for byte: %s, %v", req.Forward, err)
	}
}

// A key that is not clear text names no field: its message does not start with a stray colon.
func TestParseCreateUnclearKeyMessage(t *testing.T) {
	_, err := ParseCreate([]byte(body("\"\xff\":1")))
	e, ok := errors.AsType[*apierror.Error](err)
	if !ok || e.Code != "invalid_request" || strings.HasPrefix(e.Message, ":") {
		t.Fatalf("got %v", err)
	}
}

// An integer past int64 is told the field's range, not that it is not an integer.
func TestParseCreateIntegerPastInt64(t *testing.T) {
	for _, field := range []string{"priority", "seed", "duration"} {
		_, err := ParseCreate([]byte(body(`"` + field + `":9223372036854775808`)))
		e, ok := errors.AsType[*apierror.Error](err)
		if !ok || e.Code != "invalid_request" || e.Param != field || !strings.Contains(e.Message, "between") {
			t.Errorf("%s 2^63: got %v", field, err)
		}
	}
}

func FuzzParseCreate(f *testing.F) {
	f.Add([]byte(body("")))
	f.Add([]byte(body(`"frames":33,"seed":-1,"callback_url":"https://a.b/c"`, okText, `{"type":"image_url","image_url":{"url":"https://x/y"},"role":"first_frame"}`)))
	f.Add([]byte(`{"model":"m","content":[{"type":"audio_url","audio_url":{"url":"data:"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseCreate(b)
		if err != nil {
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Message == "" {
				t.Fatalf("error %v is not a 400 contract error", err)
			}
			return
		}
		if req.Model == "" || !json.Valid(req.Forward) {
			t.Fatalf("accepted %q as %+v", b, req)
		}
	})
}

func repeatItem(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// FuzzInteger: the plain-literal fast path of integer agrees with jsonkeys.Integer.
func FuzzInteger(f *testing.F) {
	for _, s := range []string{"5", "-5", "0", "-0", "05", "5.0", "5.5", "1e3", `"5"`, "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", " 7 ", "", "-", "null", "1 2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, ok := integer(raw)
		trimmed := bytes.TrimSpace(raw)
		var wn int64
		var wok bool
		if len(trimmed) > 0 && trimmed[0] != '"' {
			wn, wok = jsonkeys.Integer(trimmed)
		}
		if n != wn || ok != wok {
			t.Fatalf("integer(%q) = %d, %v; jsonkeys.Integer says %d, %v", raw, n, ok, wn, wok)
		}
	})
}

// Several text items reach the upstream as one, the texts joined in order with a newline, at the
// place of the first (spec §2.3); the other items keep their order and bytes.
func TestParseCreateJoinsTextItems(t *testing.T) {
	img := `{"type":"image_url","image_url":{"url":"https://cdn.example.com/a.png"},"role":"reference_image"}`
	req, err := ParseCreate([]byte(body(`"seed":7`, img, `{"type":"text","text":"a cat"}`, `{"type":"text","text":"surfing <big> waves"}`,
		`{"type":"video_url","video_url":{"url":"https://cdn.example.com/b.mp4"},"role":"reference_video"}`, `{"type":"text","text":"at \u0022dusk\""}`))) // plain texts and one decoded
	if err != nil {
		t.Fatal(err)
	}
	var fwd struct {
		Content []map[string]json.RawMessage `json:"content"`
		Seed    int                          `json:"seed"`
	}
	if err := json.Unmarshal(req.Forward, &fwd); err != nil {
		t.Fatal(err)
	}
	if len(fwd.Content) != 3 || fwd.Seed != 7 {
		t.Fatalf("forwarded %s", req.Forward)
	}
	var text string
	if err := json.Unmarshal(fwd.Content[1]["text"], &text); err != nil || text != "a cat\nsurfing <big> waves\nat \"dusk\"" {
		t.Fatalf("joined text %q (%v) in %s", text, err, req.Forward)
	}
	if string(fwd.Content[0]["type"]) != `"image_url"` || string(fwd.Content[2]["type"]) != `"video_url"` {
		t.Fatalf("the other items moved: %s", req.Forward)
	}
	one := body("", `{"type":"text","text":"only one"}`, img)
	if req, err := ParseCreate([]byte(one)); err != nil || string(req.Forward) != one {
		t.Fatalf("one text item must be forwarded byte for byte: %s, %v", req.Forward, err)
	}
}

// TestParseCreatePricedOptions checks that a create's priced options reach its estimate.
func TestParseCreatePricedOptions(t *testing.T) {
	req, err := ParseCreate([]byte(`{"model":"m","content":[{"type":"text","text":"a"},` +
		`{"type":"video_url","video_url":{"url":"https://example.com/a.mp4"},"role":"reference_video"},` +
		`{"type":"video_url","video_url":{"url":"https://example.com/b.mp4"},"role":"reference_video"}],` +
		`"duration":-1,"resolution":"1080p","ratio":"9:16","generate_audio":false,"draft":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b := req.Billing
	if b.Duration == nil || *b.Duration != -1 || b.Frames != 0 || b.Resolution != "1080p" || b.Ratio != "9:16" ||
		b.GenerateAudio == nil || *b.GenerateAudio || !b.Draft || b.ReferenceVideos != 2 {
		t.Fatalf("billing options %+v", b)
	}
	req, err = ParseCreate([]byte(`{"model":"m","content":[{"type":"text","text":"a"}],"frames":121,"generate_audio":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if b := req.Billing; b.Duration != nil || b.Frames != 121 || b.Resolution != "" || b.GenerateAudio != nil || b.ReferenceVideos != 0 {
		t.Fatalf("billing options %+v", b)
	}
}

// An absent option (resolution, ratio: the body of the bench's creates has neither) is read
// without a decoder: encoding/json built a syntax error for each, some fifteen allocations per
// create in all.
func TestJSONStringOfAnAbsentFieldAllocatesNothing(t *testing.T) {
	if s, ok := jsonString(nil); s != "" || ok {
		t.Errorf("jsonString(nil) = %q, %v", s, ok)
	}
	if n := testing.AllocsPerRun(100, func() { jsonString(nil) }); n != 0 {
		t.Errorf("jsonString(nil) allocated %v objects", n)
	}
}

// FuzzJSONEnum: jsonEnum decodes every value as jsonString does, whether or not it is one of the
// known values, and answers a known value without a copy of it.
func FuzzJSONEnum(f *testing.F) {
	for _, s := range []string{`"text"`, `"image_url"`, `"tex\u0074"`, `"Text"`, `"text `, `null`, `5`, `""`, `"reference_image"`} {
		f.Add([]byte(s))
	}
	values := append(slices.Clone(contentTypes), knownRoles...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotOK := jsonEnum(raw, values)
		want, wantOK := jsonString(raw)
		if got != want || gotOK != wantOK {
			t.Fatalf("jsonEnum(%q) = %q, %v; jsonString: %q, %v", raw, got, gotOK, want, wantOK)
		}
	})
}

func TestJSONEnumOfAKnownValueAllocatesNothing(t *testing.T) {
	raw := json.RawMessage(`"reference_image"`)
	if n := testing.AllocsPerRun(100, func() { jsonEnum(raw, knownRoles) }); n != 0 {
		t.Errorf("jsonEnum of a known role allocated %v objects", n)
	}
}

// jsonBool answers as encoding/json decoding into a bool does, the literal's fast path included.
func TestJSONBoolIsTheDecoders(t *testing.T) {
	for _, raw := range []string{`true`, `false`, ` true `, "\tfalse\n", `null`, `"true"`, `1`, `0`, `True`, `tru`, `truee`, `{}`, `[]`, ``} {
		var b bool
		want := json.Unmarshal([]byte(raw), &b) == nil
		if got := jsonBool(json.RawMessage(raw)); got != want {
			t.Errorf("jsonBool(%q) = %v, encoding/json %v", raw, got, want)
		}
	}
}
