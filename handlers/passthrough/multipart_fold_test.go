package passthrough

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// A part header folded onto a second line is refused: Go joins it to the line above, other
// parsers may read the part's name otherwise. Lines that begin with a space in a part's body, or
// in the epilogue, are content.
func TestFoldedPartHeadersAreRefused(t *testing.T) {
	rt := &Router{Catalog: catalog(t), TempDir: t.TempDir(), SpoolMemory: 64}
	model := "Content-Disposition: form-data; name=\"model\"\r\n\r\nwhisper"
	for _, tc := range []struct {
		name string
		body string
		ok   bool
	}{
		{"plain", "--x\r\n" + model + "\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n RIFF\r\n\tdata\r\n--x--\r\n \tepilogue\r\n", true},
		{"LF line ends", "--x\n" + strings.ReplaceAll(model, "\r\n", "\n") + "\n--x--\n", true},
		{"delimiter with padding", "--x \t\r\n" + model + "\r\n--x--\r\n", true},
		{"folded name", "--x\r\nContent-Disposition: form-data;\r\n name=\"model\"\r\n\r\nwhisper\r\n--x--\r\n", false},
		{"folded with a tab", "--x\r\nContent-Disposition: form-data;\r\n\tname=\"model\"\r\n\r\nwhisper\r\n--x--\r\n", false},
		{"folded header of a later part", "--x\r\n" + model + "\r\n--x\r\nContent-Disposition: form-data; name=\"file\"\r\nContent-Type: audio/wav;\r\n name=\"model\"\r\n\r\nRIFF\r\n--x--\r\n", false},
		{"folded LF header", "--x\nContent-Disposition: form-data; name=\"a\"\n x\n\nv\n--x\n" + strings.ReplaceAll(model, "\r\n", "\n") + "\n--x--\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				route.Done()
				return
			}
			if e := wantError(t, err, 400, "invalid_request_body"); !strings.Contains(e.Message, "folded") {
				t.Fatalf("refused for another reason: %s", e.Message)
			}
		})
	}
}

// FuzzFoldCheck checks that the verdict does not depend on how the body is cut into writes.
func FuzzFoldCheck(f *testing.F) {
	f.Add("--b\r\nA: 1\r\n 2\r\n\r\nx\r\n--b--\r\n", uint8(3))
	f.Add("--b\nA: 1\n\n x\n--b\n\tB\n", uint8(1))
	f.Add("--b  \r\nA: 1\r\n\r\n--b--\r\n\tz", uint8(5))
	f.Fuzz(func(t *testing.T, body string, chunk uint8) {
		whole := newFoldCheck("b")
		_, wantErr := whole.Write([]byte(body))
		pieces := newFoldCheck("b")
		var gotErr error
		size := int(chunk%7) + 1
		for i := 0; i < len(body) && gotErr == nil; i += size {
			_, gotErr = pieces.Write([]byte(body[i:min(i+size, len(body))]))
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: whole %v, in pieces of %d %v", body, wantErr, size, gotErr)
		}
	})
}

// BenchmarkFoldCheck measures the streamed check on an upload of binary data in 32 KiB reads.
func BenchmarkFoldCheck(b *testing.B) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i*7919 + i>>8)
	}
	body := append([]byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n"), data...)
	body = append(body, "\r\n--x--\r\n"...)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		f := newFoldCheck("x")
		for i := 0; i < len(body); i += 32 << 10 {
			if _, err := f.Write(body[i:min(i+32<<10, len(body))]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
