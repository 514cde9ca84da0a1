package imageedit

import "testing"

// A typical edit body: a prompt, two reference images and a few options.
var benchEditBody = []byte(`{"model":"seededit-3-0","prompt":"put the person of the first image in the scene of the second, see https://example.com/style","images":[{"image_url":"https://cdn.example.com/person.png"},{"image_url":"https://cdn.example.com/scene.jpg"}],"n":1,"size":"2048x2048","output_format":"png"}`)

func BenchmarkParseEdit(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseEdit(benchEditBody); err != nil {
			b.Fatal(err)
		}
	}
}
