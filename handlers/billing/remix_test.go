package billing

import "testing"

// TestEstimateRemix: a remix is held at its source video's length and picture; a length not
// known at max_seconds, a resolution not known (or not the contract's) at the one that costs the
// most, at its ratio or, not known, at the ratio with the most pixels, whichever unit prices the
// model.
func TestEstimateRemix(t *testing.T) {
	sora := &Price{Model: "sora-2", Second: m(t, "0.10"), SecondBands: map[string]Money{"1080p": m(t, "0.25")}}
	bands := &Price{Model: "bands", SecondBands: map[string]Money{"480p": m(t, "0.05"), "720p": m(t, "0.30"), "1080p": m(t, "0.20")}, MaxSeconds: 12}
	seedance := &Price{Model: "seedance", VideoTokens: m(t, "2.50")}
	for _, tc := range []struct {
		name   string
		price  *Price
		source Usage
		want   string
	}{
		{"seconds, 8 s at 720p", sora, Usage{VideoSeconds: 8, Resolution: "720p", Ratio: "16:9"}, "0.8"},
		{"seconds, 4 s at 1080p", sora, Usage{VideoSeconds: 4, Resolution: "1080p", Ratio: "9:16"}, "1"},
		// 15 s (the default max_seconds) at 1080p, the costliest band
		{"seconds, nothing known", sora, Usage{}, "3.75"},
		{"seconds, length known", sora, Usage{VideoSeconds: 4}, "1"},
		// 12 s (max_seconds) at 720p, the costliest band here, not the highest resolution
		{"bands, picture known", bands, Usage{Resolution: "480p"}, "0.6"},
		{"bands, nothing known", bands, Usage{}, "3.6"},
		{"bands, a resolution that is not the contract's", bands, Usage{VideoSeconds: 2, Resolution: "8k"}, "0.6"},
		// 5 s at 4k 21:9, 5040 × 2160 × 24 × 5 / 1024 = 1,275,750 tokens
		{"tokens, 5 s, picture not known", seedance, Usage{VideoSeconds: 5}, "3.189375"},
		// a known ratio stays: 5 s at 4k 9:16, 2160 × 3840 × 24 × 5 / 1024 = 972,000 tokens
		{"tokens, 5 s at 9:16, resolution not known", seedance, Usage{VideoSeconds: 5, Ratio: "9:16"}, "2.43"},
		{"tokens, 5 s at 720p 16:9", seedance, Usage{VideoSeconds: 5, Resolution: "720p", Ratio: "16:9"}, "0.2574"},
		// 5 s at 720p 21:9, the ratio with the most pixels: 1504 × 640 × 24 × 5 / 1024 = 112,800 tokens
		{"tokens, 5 s at 720p, ratio not known", seedance, Usage{VideoSeconds: 5, Resolution: "720p"}, "0.282"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.price.EstimateRemix(tc.source)
			if got.Amount.String() != tc.want {
				t.Errorf("estimate = %s, want %s (usage %+v)", got.Amount, tc.want, got.Usage)
			}
			if again := tc.price.EstimateRequest(Request{Remix: &tc.source}); again.Amount != got.Amount {
				t.Errorf("EstimateRequest = %s, want EstimateRemix's %s", again.Amount, got.Amount)
			}
		})
	}
}
