package idempotency

import (
	"bytes"
	"mime/multipart"
	"testing"
)

// form encodes fields (name, value pairs; a name ending in "@" is a file part) with boundary.
func form(t *testing.T, boundary string, fields ...string) (contentType string, body []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(fields); i += 2 {
		name, value := fields[i], fields[i+1]
		var err error
		if n := len(name); n > 0 && name[n-1] == '@' {
			var fw interface{ Write([]byte) (int, error) }
			fw, err = w.CreateFormFile(name[:n-1], "a.png")
			if err == nil {
				_, err = fw.Write([]byte(value))
			}
		} else {
			err = w.WriteField(name, value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return w.FormDataContentType(), b.Bytes()
}

func TestRequestHashReadsFormsByTheirParts(t *testing.T) {
	hash := func(boundary string, fields ...string) string {
		ct, body := form(t, boundary, fields...)
		return requestHash("POST", "/v1/videos", ct, body)
	}
	a := hash("----formdata-undici-012345678901", "model", "m", "prompt", "a fox")
	if b := hash("----formdata-undici-098765432109", "model", "m", "prompt", "a fox"); a != b {
		t.Error("the same form with another boundary is another request")
	}
	for name, other := range map[string]string{
		"another value":       hash("x1", "model", "m", "prompt", "a cat"),
		"another order":       hash("x1", "prompt", "a fox", "model", "m"),
		"a part more":         hash("x1", "model", "m", "prompt", "a fox", "seconds", "4"),
		"value moved to name": hash("x1", "model", "m", "prompta fox", ""),
		"a file part":         hash("x1", "model", "m", "prompt@", "a fox"),
	} {
		if other == a {
			t.Errorf("%s: same hash as the original form", name)
		}
	}
	// A body that is not a form counts by its bytes, and the path and method count.
	ct, body := form(t, "x1", "model", "m")
	if requestHash("POST", "/v1/videos", "application/json", body) == requestHash("POST", "/v1/videos", ct, body) {
		t.Error("a form and the same bytes sent as JSON hash alike")
	}
	if requestHash("POST", "/v1/videos", ct, body) == requestHash("POST", "/v1/other", ct, body) {
		t.Error("the path does not count")
	}
	broken := []byte("--x1\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm") // no closing delimiter
	if requestHash("POST", "/v1/videos", "multipart/form-data; boundary=x1", broken) != HashOf("POST", "/v1/videos", broken) {
		t.Error("a form that does not parse does not count by its bytes")
	}
}

// A part's other headers count too: quoted-printable, say, makes a decoder read other bytes
// from the same content.
func TestRequestHashCountsEveryPartHeader(t *testing.T) {
	body := func(extra string) []byte {
		return []byte("--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n" + extra +
			"\r\na=3Dfox\r\n--b--\r\n")
	}
	ct := "multipart/form-data; boundary=b"
	plain := requestHash("POST", "/v1/videos", ct, body(""))
	if qp := requestHash("POST", "/v1/videos", ct, body("Content-Transfer-Encoding: quoted-printable\r\n")); qp == plain {
		t.Error("a quoted-printable part hashes as the plain one")
	}
	if again := requestHash("POST", "/v1/videos", "multipart/form-data; boundary=c",
		bytes.ReplaceAll(body(""), []byte("--b"), []byte("--c"))); again != plain {
		t.Error("the same form with another boundary is another request")
	}
}

// TestRequestHashKeepsRawBodiesApartFromForms: a body sent as JSON whose bytes are a form's
// framing (what the form's parts hash as, behind its tag) is another request than the form, so
// a key restricted to some models cannot send it to replay the form's answer; a raw body that
// begins with the raw tag does not pass for another raw body either. Every other raw body hashes
// as before (answers kept before the rule still match).
func TestRequestHashKeepsRawBodiesApartFromForms(t *testing.T) {
	ct, body := form(t, "x1", "model", "video-b", "prompt", "a fox")
	parts, ok := formParts(ct, body)
	if !ok {
		t.Fatal("the form does not parse")
	}
	forged := append([]byte(formTag+"\x00"), parts...)
	if requestHash("POST", "/v1/videos", "application/json", forged) == requestHash("POST", "/v1/videos", ct, body) {
		t.Fatal("a raw body made of a form's framing hashes as the form")
	}
	inner := append([]byte(rawTag+"\x00"), forged...)
	if requestHash("POST", "/v1/videos", "application/json", inner) == requestHash("POST", "/v1/videos", "application/json", forged) {
		t.Fatal("a raw body made of another's tagged framing hashes as it")
	}
	plain := []byte(`{"model":"video-a","prompt":"a fox"}`)
	if requestHash("POST", "/v1/videos", "application/json", plain) != HashOf("POST", "/v1/videos", plain) {
		t.Fatal("an ordinary raw body no longer hashes as it did")
	}
}
