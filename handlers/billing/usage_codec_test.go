package billing

import "testing"

func TestUsageCodec(t *testing.T) {
	for _, u := range []Usage{
		{},
		{VideoSeconds: 5, Resolution: "720p", Ratio: "16:9", Audio: true, Requests: 1},
		{VideoFrames: 121, FPS: 24, ReferenceVideoSeconds: 15, VideoTokens: 9, Width: 1248, Height: 704, Draft: true},
		{Images: 3, ImageSize: "1536x1024", ImageQuality: "high", InputTokens: 7, OutputTokens: 4096, Requests: 1},
	} {
		s := u.Encode()
		got, err := DecodeUsage(s)
		if err != nil || got != u {
			t.Errorf("%+v → %q → %+v, %v", u, s, got, err)
		}
		if !safeToken(stringsReplaceSeparators(s)) {
			t.Errorf("%q has a quote, backslash or space", s)
		}
	}
	if s := (Usage{Resolution: `7"20p`, VideoSeconds: 5}).Encode(); s != "s=5" {
		t.Errorf("an unsafe value was encoded: %q", s)
	}
	for _, bad := range []string{"s", "s=x", "zz=1"} {
		if _, err := DecodeUsage(bad); err == nil {
			t.Errorf("DecodeUsage(%q) succeeded", bad)
		}
	}
}

// stringsReplaceSeparators drops the codec's own separators, which safeToken refuses in a value.
func stringsReplaceSeparators(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] != ',' && s[i] != '=' {
			out = append(out, s[i])
		}
	}
	return string(out)
}
