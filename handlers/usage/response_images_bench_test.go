package usage

import (
	"strings"
	"testing"
)

// BenchmarkResponseImagesJSON reads a JSON answer with two images of about 2 MB of base64 each,
// in the 32 KiB writes of the proxy.
func BenchmarkResponseImagesJSON(b *testing.B) {
	image := answerImageHigh + strings.Repeat("QUJD", 500_000) + `"}`
	answer := []byte(jsonAnswer("completed", image, image))
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		var r ResponseImages
		for p := answer; len(p) > 0; {
			n := min(32<<10, len(p))
			r.Write(p[:n])
			p = p[n:]
		}
		if made := r.Made(); len(made.Images) != 2 {
			b.Fatal(made)
		}
	}
}
