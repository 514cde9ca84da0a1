package passthrough

import (
	"bytes"
	"mime/multipart"
	"net/http/httptest"
	"net/textproto"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// A form's request hash follows what reaches the provider: another part, order, filename or type
// differs; a dropped header or a canonicalised type does not.
func TestIdempotentCreateFormHashFollowsTheForwardedParts(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	type part struct{ name, filename, ctype, te, value string }
	hash := func(parts ...part) string {
		t.Helper()
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, p := range parts {
			h := textproto.MIMEHeader{}
			cd := `form-data; name="` + p.name + `"`
			if p.filename != "" {
				cd += `; filename="` + p.filename + `"`
			}
			h.Set("Content-Disposition", cd)
			if p.ctype != "" {
				h.Set("Content-Type", p.ctype)
			}
			if p.te != "" {
				h.Set("Content-Transfer-Encoding", p.te)
			}
			w, _ := mw.CreatePart(h)
			w.Write([]byte(p.value))
		}
		mw.Close()
		r := httptest.NewRequest("POST", "/v1/videos", &b)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		r.Header.Set("Idempotency-Key", "k")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatal(err)
		}
		route.Done()
		return route.RequestHash
	}
	model := part{name: "model", value: "doubao"}
	prompt := part{name: "prompt", value: "a lighthouse"}
	ref := part{name: "input_reference", filename: "a.png", ctype: "image/png", value: "PNG1"}
	base := hash(model, prompt, ref)
	for name, other := range map[string]string{
		"a repeated part":   hash(model, prompt, ref, ref),
		"another order":     hash(model, ref, prompt),
		"another filename":  hash(model, prompt, part{name: "input_reference", filename: "b.png", ctype: "image/png", value: "PNG1"}),
		"another type":      hash(model, prompt, part{name: "input_reference", filename: "a.png", ctype: "image/jpeg", value: "PNG1"}),
		"a file as a field": hash(model, prompt, part{name: "input_reference", ctype: "image/png", value: "PNG1"}),
		"content moved":     hash(model, part{name: "prompt", value: "a lighthouseP"}, part{name: "input_reference", filename: "a.png", ctype: "image/png", value: "NG1"}),
	} {
		if other == base {
			t.Errorf("%s hashes as the first form", name)
		}
	}
	// A dropped header (binary transfer encoding) and a canonicalised type reach the provider
	// the same: they hash the same.
	if same := hash(model, prompt, part{name: "input_reference", filename: "a.png", ctype: "image/PNG", te: "binary", value: "PNG1"}); same != base {
		t.Error("a form that reaches the provider the same hashes otherwise")
	}
}
