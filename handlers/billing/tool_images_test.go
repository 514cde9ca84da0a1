package billing

import "testing"

// The images a Responses image_generation tool may make are held at the tool's size and quality
// (the costliest the price lists where it leaves them open), max_tool_calls of them, and settled
// per image made at the size and quality each reports for what the tool left open, past the
// held count too; an answer that reports nothing is charged the hold.
func TestToolImagesHeldAndSettledPerImage(t *testing.T) {
	p := &Price{Model: "gpt-image-2", Image: m(t, "0.04"), Request: m(t, "1"), ImageSizes: []ImagePrice{
		{Size: "1536x1024", Amount: m(t, "0.06")},
		{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")},
	}}
	for _, c := range []struct {
		name string
		tool ToolImages
		want string
	}{
		{"no size, no quality: the costliest", ToolImages{Count: 1}, "0.17"},
		{"auto size, auto quality", ToolImages{Size: "auto", Quality: "auto", Count: 2}, "0.34"},
		{"a named size and quality", ToolImages{Size: "1024x1024", Quality: "high", Count: 3}, "0.51"},
		{"a named size, auto quality", ToolImages{Size: "1536x1024", Count: 1}, "0.06"},
		{"none allowed", ToolImages{Count: 0}, "0"},
	} {
		if got := p.EstimateToolImages(c.tool).Amount.String(); got != c.want {
			t.Errorf("%s: hold = %s, want %s (the image model's request price is not held)", c.name, got, c.want)
		}
	}
	held := p.EstimateToolImages(ToolImages{Count: 1}).Usage
	for _, c := range []struct {
		name string
		est  Usage
		made MadeImages
		want string
	}{
		{"not reported: the hold", held, MadeImages{}, "0.17"},
		{"reported, none made", held, MadeImages{Reported: true}, "0"},
		{"one at its reported size and quality", held, MadeImages{Reported: true, Images: []MadeImage{{"1024x1024", "low"}}}, "0.04"},
		{"more than held, each as reported", held, MadeImages{Reported: true, Images: []MadeImage{
			{"1024x1024", "high"}, {"1536x1024", "medium"}, {"1024x1024", "medium"}}}, "0.27"},
		{"one reporting nothing: the hold's band", held, MadeImages{Reported: true, Images: []MadeImage{{}}}, "0.17"},
		{"a quality no price names: the hold's band", held, MadeImages{Reported: true, Images: []MadeImage{{"1024x1024", "xhigh"}}}, "0.17"},
		{"a size the tool named is charged as named", p.EstimateToolImages(ToolImages{Size: "1024x1024", Quality: "high", Count: 1}).Usage,
			MadeImages{Reported: true, Images: []MadeImage{{"1536x1024", "low"}}}, "0.17"},
	} {
		if got := p.SettleToolImages(c.est, c.made, 0).String(); got != c.want {
			t.Errorf("%s: settled %s, want %s", c.name, got, c.want)
		}
	}
}

// TestToolImagesChargedWithinMaxToolCalls: images reported past the request's max_tool_calls
// are not made (the provider ignores further calls), so at most max_tool_calls are charged, the
// costliest of those reported (in whatever order a stream's calls come); 0 (no max_tool_calls)
// bounds nothing, and what was not reported is charged as held.
func TestToolImagesChargedWithinMaxToolCalls(t *testing.T) {
	p := &Price{Model: "gpt-image-2", Image: m(t, "0.04"), ImageSizes: []ImagePrice{
		{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")},
		{Size: "1536x1024", Quality: "high", Amount: m(t, "0.25")},
	}}
	held := p.EstimateToolImages(ToolImages{Count: 1}).Usage
	three := MadeImages{Reported: true, Images: []MadeImage{{"1024x1024", "low"}, {"1536x1024", "high"}, {"1024x1024", "high"}}}
	for _, c := range []struct {
		most int64
		want string
	}{{0, "0.46"}, {1, "0.25"}, {2, "0.42"}, {3, "0.46"}, {50, "0.46"}} {
		if got := p.SettleToolImages(held, three, c.most).String(); got != c.want {
			t.Errorf("max_tool_calls %d: settled %s, want %s", c.most, got, c.want)
		}
	}
	if got := p.SettleToolImages(held, MadeImages{}, 2).String(); got != "0.25" {
		t.Errorf("nothing reported, max_tool_calls 2: settled %s, want the hold's 0.25", got)
	}
}
