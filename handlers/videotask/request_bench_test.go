package videotask

import "testing"

// A typical create body: a prompt, a reference image and a few options.
var benchCreateBody = []byte(`{"model":"seedance-1-0-pro","content":[{"type":"text","text":"a cat walks on the beach at sunset --ratio 16:9"},{"type":"image_url","image_url":{"url":"https://cdn.example.com/cat.png"},"role":"reference_image"}],"resolution":"1080p","duration":5,"watermark":false}`)

func BenchmarkParseCreate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCreate(benchCreateBody); err != nil {
			b.Fatal(err)
		}
	}
}
