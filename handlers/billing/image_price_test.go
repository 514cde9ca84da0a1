package billing

import "testing"

// An image request that names no quality, or "auto" (the provider picks), is held at the
// highest price any quality of its size can cost, and settled at the quality and size the answer
// reports; when the answer reports none, at the hold's bound.
func TestImageQualityAutoIsHeldAtTheHighestBand(t *testing.T) {
	gptImage := &Price{Model: "gpt-image-1", Image: m(t, "0.04"), ImageSizes: []ImagePrice{
		{Size: "1536x1024", Amount: m(t, "0.06")},
		{Size: "1024x1024", Quality: "low", Amount: m(t, "0.011")},
		{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")},
		{Size: "1536x1024", Quality: "high", Amount: m(t, "0.25")},
	}}
	for _, c := range []struct {
		name          string
		n             int64
		size, quality string
		want          string
	}{
		{"auto at a size with bands", 1, "1024x1024", "auto", "0.17"},
		{"no quality at a size with bands", 2, "1024x1024", "", "0.34"},
		{"a quality no price names", 1, "1024x1024", "standard", "0.17"},
		{"auto at a size priced for any quality and for high", 1, "1536x1024", "auto", "0.25"},
		{"auto at a size without bands", 1, "2048x2048", "auto", "0.04"},
		{"auto size and quality: the highest of every size", 1, "auto", "auto", "0.25"},
		{"auto size, low quality", 1, "auto", "low", "0.06"},
		{"a named quality", 1, "1024x1024", "low", "0.011"},
		{"medium falls to the size's price for any quality, then image", 1, "1024x1024", "medium", "0.04"},
	} {
		if got := gptImage.EstimateImages(c.n, c.size, c.quality).Amount.String(); got != c.want {
			t.Errorf("%s: hold = %s, want %s", c.name, got, c.want)
		}
	}
	hold := gptImage.EstimateImages(1, "1024x1024", "auto")
	for _, c := range []struct {
		name   string
		actual Usage
		want   string
	}{
		{"the answer reports low", Usage{Images: 1, ImageQuality: "low"}, "0.011"},
		{"the answer reports high, and a size other than the one named", Usage{Images: 1, ImageSize: "1536x1024", ImageQuality: "high"}, "0.17"},
		{"the answer reports nothing", Usage{Images: 1}, "0.17"},
	} {
		if got := gptImage.Settle(hold.Usage, c.actual).String(); got != c.want {
			t.Errorf("%s: settled = %s, want %s", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ size, quality, wantSize, wantQuality string }{
		{"1024x1536", "high", "1024x1536", "high"},
		{"auto", "auto", "", ""},
		{"1024x1024 ", "HIGH", "", ""},
		{"", "", "", ""},
	} {
		if size, quality := AnswerImage(c.size, c.quality); size != c.wantSize || quality != c.wantQuality {
			t.Errorf("AnswerImage(%q, %q) = %q, %q; want %q, %q", c.size, c.quality, size, quality, c.wantSize, c.wantQuality)
		}
	}
}
