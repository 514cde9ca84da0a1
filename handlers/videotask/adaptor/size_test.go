package adaptor

import "testing"

// TestSizeTable pins the one mapping of pixel sizes onto the contract's resolution and ratio,
// which the OpenAI-style front (a client's size) and the adaptors (a provider's reported size)
// share: the nearest by proportion, the same for a portrait size as for its landscape twin.
func TestSizeTable(t *testing.T) {
	for _, c := range []struct {
		w, h              int64
		resolution, ratio string
	}{
		{1280, 720, "720p", "16:9"}, {720, 1280, "720p", "9:16"},
		{1792, 1024, "1080p", "16:9"}, {1024, 1792, "1080p", "9:16"}, // Sora's larger sizes
		{1920, 1080, "1080p", "16:9"}, {1080, 1920, "1080p", "9:16"},
		{832, 480, "480p", "16:9"}, {854, 480, "480p", "16:9"}, {640, 480, "480p", "4:3"},
		{1366, 768, "720p", "16:9"}, // MiniMax's 768P
		{960, 540, "480p", "16:9"}, {1024, 1024, "1080p", "1:1"}, {1080, 1080, "1080p", "1:1"},
		{3840, 2160, "4k", "16:9"}, {2160, 3840, "4k", "9:16"}, {2560, 1080, "1080p", "21:9"},
		{1440, 1080, "1080p", "4:3"}, {1080, 1440, "1080p", "3:4"},
		{900, 900, "1080p", "1:1"}, {850, 850, "720p", "1:1"}, // 1080/900 < 900/720; 850/720 < 1080/850
		{1550, 1000, "1080p", "16:9"}, {1000, 1550, "1080p", "9:16"}, // 1.55 is nearer 16:9 by proportion
		{100, 50, "480p", "16:9"}, {8192, 8192, "4k", "1:1"},
	} {
		if r, q := Band(c.w, c.h), Ratio(c.w, c.h); r != c.resolution || q != c.ratio {
			t.Errorf("%dx%d = %s %s, want %s %s", c.w, c.h, r, q, c.resolution, c.ratio)
		}
	}
}
