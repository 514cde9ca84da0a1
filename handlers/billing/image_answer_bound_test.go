package billing

import "testing"

// An image request that names its size and quality is charged at them, whatever the answer
// reports: an answer that says it made smaller or cheaper images than were asked for (low,
// 256x256 for a request of high, 1536x1024) does not lower the charge, and one that says more
// does not raise it past the hold. Only what the request left open (auto, none) is priced from
// the answer.
func TestImageAnswerDoesNotOverrideNamedSizeAndQuality(t *testing.T) {
	gptImage := &Price{Model: "gpt-image-1", Image: m(t, "0.04"), ImageSizes: []ImagePrice{
		{Size: "256x256", Quality: "low", Amount: m(t, "0.005")},
		{Size: "1024x1024", Quality: "low", Amount: m(t, "0.011")},
		{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")},
		{Size: "1536x1024", Quality: "high", Amount: m(t, "0.25")},
	}}
	for _, c := range []struct {
		name                string
		size, quality       string
		answerSize, answerQ string
		want                string
	}{
		{"named high 1536x1024, answer says low 256x256", "1536x1024", "high", "256x256", "low", "0.25"},
		{"named low 1024x1024, answer says high 1536x1024", "1024x1024", "low", "1536x1024", "high", "0.011"},
		{"named size, auto quality: the answer's quality", "1024x1024", "auto", "256x256", "low", "0.011"},
		{"auto size, named quality: the answer's size", "auto", "high", "1024x1024", "low", "0.17"},
		{"auto both: the answer's", "auto", "auto", "256x256", "low", "0.005"},
	} {
		hold := gptImage.EstimateImages(1, c.size, c.quality)
		got := gptImage.Settle(hold.Usage, Usage{Images: 1, ImageSize: c.answerSize, ImageQuality: c.answerQ})
		if got.String() != c.want {
			t.Errorf("%s: settled = %s, want %s", c.name, got, c.want)
		}
		if got > hold.Amount {
			t.Errorf("%s: settled %s over the hold %s", c.name, got, hold.Amount)
		}
	}
}
