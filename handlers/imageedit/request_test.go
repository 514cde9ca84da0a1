package imageedit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
)

func TestParseEdit(t *testing.T) {
	img := `{"image_url":"https://cdn.example.com/a.png"}`
	base := func(extra string, images ...string) string {
		if images == nil {
			images = []string{img}
		}
		b := `{"model":"gpt-image-1","prompt":"make it blue","images":[` + strings.Join(images, ",") + `]`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	fifteen := make([]string, 15)
	for i := range fifteen {
		fifteen[i] = img
	}
	for _, tc := range []struct {
		name, body, param string // param "" means valid
	}{
		{"minimal", base(""), ""},
		{"all options", base(`"n":10,"size":"3840x2160","quality":"high","output_format":"webp","moderation":"low","response_format":"url"`), ""},
		{"fifteen images", base("", fifteen...), ""},
		{"nulls absent", base(`"n":null,"size":null`), ""},
		{"missing model", `{"prompt":"p","images":[` + img + `]}`, "model"},
		{"empty model", `{"model":"","prompt":"p","images":[` + img + `]}`, "model"},
		{"missing prompt", `{"model":"m","images":[` + img + `]}`, "prompt"},
		{"blank prompt", `{"model":"m","prompt":" ","images":[` + img + `]}`, "prompt"},
		{"missing images", `{"model":"m","prompt":"p"}`, "images"},
		{"no images", base("", []string{}...) + "", ""},
		{"sixteen images", base("", append(fifteen, img)...), "images"},
		{"image without url", base("", `{}`), "images[0].image_url"},
		{"local path", base("", `{"image_url":"./cat.png"}`), "images[0].image_url"},
		{"data URL", base("", img, `{"image_url":"data:image/png;base64,AAAA"}`), "images[1].image_url"},
		{"presigned URL", base("", `{"image_url":"https://b.s3.amazonaws.com/k?X-Amz-Signature=abc"}`), "images[0].image_url"},
		{"private address", base("", `{"image_url":"http://192.168.1.20/a.png"}`), "images[0].image_url"},
		{"n zero", base(`"n":0`), "n"},
		{"n eleven", base(`"n":11`), "n"},
		{"n fractional", base(`"n":1.5`), "n"},
		{"bad size", base(`"size":"512x512"`), "size"},
		{"bad quality", base(`"quality":"ultra"`), "quality"},
		{"bad format", base(`"output_format":"gif"`), "output_format"},
		{"bad moderation", base(`"moderation":"high"`), "moderation"},
		{"b64 response", base(`"response_format":"b64_json"`), "response_format"},
		{"model smuggled by case", base(`"Model":"gpt-image-2"`), "model"},
		{"model repeated", base(`"model":"gpt-image-2"`), "model"},
		{"model in capitals", `{"MODEL":"x","model":"m","prompt":"p","images":[` + img + `]}`, "model"},
		{"image URL smuggled by case", base("", `{"image_url":"https://cdn.example.com/a.png","Image_URL":"http://10.0.0.1/"}`), "images[0].image_url"},
		{"image URL repeated", base("", `{"image_url":"https://cdn.example.com/a.png","image_url":"http://10.0.0.1/"}`), "images[0].image_url"},
		{"mask", base(`"mask":{"image_url":"https://cdn.example.com/m.png"}`), ""},
		{"private mask", base(`"mask":{"image_url":"http://10.0.0.1/m.png"}`), "mask.image_url"},
		{"mask as a string", base(`"mask":"http://10.0.0.1/m.png"`), "mask.image_url"},
		{"mask smuggled by case", base(`"Mask":{"image_url":"http://10.0.0.1/m.png"}`), "mask"},
		{"mask file id", base(`"mask":{"file_id":"file-abc"}`), "mask.file_id"},
		{"image file id beside its URL", base("", `{"image_url":"https://cdn.example.com/a.png","file_id":"file-abc"}`), "images[0].file_id"},
		// URLs in fields the gateway forwards unread must be public ones (media.Unread).
		{"public URLs in unknown fields", base(`"image":"https://cdn.example.com/b.png","extra":{"refs":["https://cdn.example.com/c.png"]}`, `{"image_url":"https://cdn.example.com/a.png","detail":"https://cdn.example.com/d.png"}`), ""},
		{"URL text in the prompt", `{"model":"m","prompt":"http://10.0.0.1/ like https://example.com","images":[` + img + `]}`, ""},
		{"metadata address in an unknown field", base(`"image":"http://169.254.169.254/latest/meta-data/"`), "image"},
		{"private address beside a checked image URL", base("", img, `{"image_url":"https://cdn.example.com/a.png","url":"http://10.0.0.1/"}`), "images[1].url"},
		{"localhost at depth", base(`"extra":{"a":[{"b":"http://localhost:8080/x"}]}`), "extra.a[0].b"},
		{"private address beside the mask", base(`"mask":{"image_url":"https://cdn.example.com/m.png","src":"http://[::1]/m.png"}`), "mask.src"},
		{"presigned S3 in an unknown field", base(`"reference":{"url":"https://b.s3.amazonaws.com/k?X-Amz-Signature=abc"}`), "reference.url"},
		{"presigned GCS in an unknown field", base(`"refs":[["https://storage.googleapis.com/b/k?X-Goog-Signature=abc"]]`), "refs[0][0]"},
		{"data URL in an unknown field", base(`"image":"data:image/png;base64,AAAA"`), "image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no images" {
				tc.body, tc.param = `{"model":"m","prompt":"p","images":[]}`, "images"
			}
			model, _, err := ParseEdit([]byte(tc.body))
			if tc.param == "" {
				if err != nil || model == "" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Param != tc.param || !strings.Contains(e.Message, tc.param) {
				t.Fatalf("err = %+v, want 400 naming %s", err, tc.param)
			}
		})
	}
	for _, bad := range []string{`[]`, `nul`, `"x"`} {
		if _, _, err := ParseEdit([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A missing, null or empty model is missing_model, as on the task API and the pass-through
// endpoints.
func TestParseEditMissingModel(t *testing.T) {
	for _, b := range []string{
		`{"prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}]}`,
		`{"model":null,"prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}]}`,
		`{"model":"","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}]}`,
	} {
		_, _, err := ParseEdit([]byte(b))
		if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Code != "missing_model" || e.Param != "model" {
			t.Errorf("%s: got %v, want 400 missing_model", b, err)
		}
	}
	_, _, err := ParseEdit([]byte(`{"model":7,"prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}]}`))
	if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Code != "invalid_request" {
		t.Errorf("a model that is not a string: got %v, want invalid_request", err)
	}
}

// n written 2.0 is the integer 2, and the upstream gets 2; a plain body is forwarded with its
// members as sent (in name order).
func TestParseEditForwardsCheckedN(t *testing.T) {
	const img = `"images":[{"image_url":"https://cdn.example.com/a.png"}]`
	_, fwd, err := ParseEdit([]byte(`{"model":"m","prompt":"p",` + img + `,"n":2.0,"size":null}`))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(fwd, &f); err != nil || string(f["n"]) != "2" || string(f["model"]) != `"m"` {
		t.Fatalf("forwarded %s (%v)", fwd, err)
	}
	plain := `{"model":"m","prompt":"p <b>&</b>",` + img + `,"n":2}`
	if _, fwd, err := ParseEdit([]byte(plain)); err != nil || string(fwd) != `{`+img+`,"model":"m","n":2,"prompt":"p <b>&</b>"}` {
		t.Fatalf("a plain body must be forwarded with its members as sent: %s, %v", fwd, err)
	}
}

// TestParseEditForwardsOnlyWhatWasChecked: what reaches the provider is the contract's fields and
// the checked extensions, each image and the mask as their checked image_url alone. A bare Base64
// image or a local path in a field the gateway does not read, at the top or beside an image's
// URL, is not forwarded (it was before: only URL-like strings were checked); an extension of the
// wrong type or range is 400 naming it.
func TestParseEditForwardsOnlyWhatWasChecked(t *testing.T) {
	const b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	body := `{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png","data":"` + b64 + `"}],` +
		`"mask":{"image_url":"https://cdn.example.com/m.png","path":"/etc/passwd"},"image":"` + b64 + `","reference":"/srv/secret.png",` +
		`"extra":{"file":"C:\\photos\\a.png"},"size":"1024x1024","background":"transparent","input_fidelity":"high",` +
		`"output_compression":80,"partial_images":2,"stream":false,"user":"u-1","seed":7,"watermark":false,"size_hint":null}`
	_, fwd, err := ParseEdit([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"background":"transparent","images":[{"image_url":"https://cdn.example.com/a.png"}],"input_fidelity":"high",` +
		`"mask":{"image_url":"https://cdn.example.com/m.png"},"model":"m","output_compression":80,"partial_images":2,"prompt":"p",` +
		`"seed":7,"size":"1024x1024","stream":false,"user":"u-1","watermark":false}`
	if string(fwd) != want {
		t.Fatalf("forwarded %s\nwant      %s", fwd, want)
	}
	for field, value := range map[string]string{
		"background": `"green"`, "input_fidelity": `"max"`, "output_compression": `101`, "partial_images": `1.5`,
		"stream": `"true"`, "user": `"` + strings.Repeat("u", 257) + `"`, "seed": `2147483648`, "watermark": `1`,
	} {
		_, _, err := ParseEdit([]byte(`{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}],"` + field + `":` + value + `}`))
		if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Status != 400 || e.Param != field {
			t.Errorf("%s %s: %v, want 400 naming it", field, value, err)
		}
	}
}

func FuzzParseEdit(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"p","images":[{"image_url":"https://a/b"}],"n":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		model, _, err := ParseEdit(b)
		if err == nil && model == "" {
			t.Fatal("accepted without a model")
		}
		var e *apierror.Error
		if err != nil && (!errors.As(err, &e) || e.Status != 400) {
			t.Fatalf("non-400 error %v", err)
		}
	})
}
