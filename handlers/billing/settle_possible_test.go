package billing

import (
	"math"
	"testing"
)

// A reported length, frame rate or size past what a video can be is not charged: the estimate's
// value stands in for it; one within the bounds is charged as reported.
func TestSettleTakesOnlyPossibleVideos(t *testing.T) {
	second := &Price{Model: "v", Second: 10_000}               // 0.01 a second
	long := &Price{Model: "v", Second: 10_000, MaxSeconds: 30} // its model makes up to 30 s
	tokens := &Price{Model: "v", VideoTokens: 1_000_000}       // 1 per million tokens
	longTokens := &Price{Model: "v", VideoTokens: 1_000_000, MaxSeconds: 30}
	banded := &Price{Model: "v", SecondBands: map[string]Money{"720p": 10_000, "4k": 40_000}}
	five := int64(5)
	estimate := second.EstimateVideo(VideoTask{Duration: &five}).Usage
	for _, tc := range []struct {
		name   string
		price  *Price
		actual Usage
		want   Money
	}{
		{"15 s", second, Usage{VideoSeconds: 15}, 150_000},
		{"16 s", second, Usage{VideoSeconds: 16}, 50_000},
		{"2^63-1 s", second, Usage{VideoSeconds: math.MaxInt64}, 50_000},
		{"30 s under max_seconds 30", long, Usage{VideoSeconds: 30}, 300_000},
		{"31 s under max_seconds 30", long, Usage{VideoSeconds: 31}, 50_000},
		{"360 frames at 24 fps", second, Usage{VideoFrames: 360, FPS: 24}, 150_000},
		{"361 frames at 24 fps", second, Usage{VideoFrames: 361, FPS: 24}, 50_000},
		{"10^6 fps", tokens, Usage{VideoSeconds: 5, FPS: 1_000_000, Width: 1024, Height: 1024}, Money(1024 * 1024 * 24 * 5 / 1024)},
		{"4k named from a size of 99999x99999", banded, Usage{VideoSeconds: 5, Resolution: "4k", Ratio: "1:1", Width: 99999, Height: 99999}, 50_000},
		{"4k of 3840x2160", banded, Usage{VideoSeconds: 5, Resolution: "4k", Ratio: "16:9", Width: 3840, Height: 2160}, 200_000},
		{"a side of 8193", tokens, Usage{VideoSeconds: 5, Resolution: "720p", Ratio: "16:9", Width: 8193, Height: 10}, Money(1248 * 704 * 24 * 5 / 1024)},
		{"243,000 tokens", tokens, Usage{VideoTokens: 243_000}, 243_000},
		{"the most tokens of 15 s", tokens, Usage{VideoTokens: 8192 * 8192 * 60 * 30 / 1024}, 8192 * 8192 * 60 * 30 / 1024},
		{"one token more", tokens, Usage{VideoTokens: 8192*8192*60*30/1024 + 1}, Money(1248 * 704 * 24 * 5 / 1024)},
		{"10^15 tokens", tokens, Usage{VideoTokens: 1e15}, Money(1248 * 704 * 24 * 5 / 1024)},
		{"2^63-1 tokens", tokens, Usage{VideoTokens: math.MaxInt64}, Money(1248 * 704 * 24 * 5 / 1024)},
		{"10^15 tokens of 8 s at 1080p", tokens, Usage{VideoTokens: 1e15, VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}, Money(1920 * 1088 * 24 * 8 / 1024)},
		{"the most tokens of 30 s under max_seconds 30", longTokens, Usage{VideoTokens: 8192 * 8192 * 60 * 45 / 1024}, 8192 * 8192 * 60 * 45 / 1024},
		{"past them", longTokens, Usage{VideoTokens: 8192*8192*60*45/1024 + 1}, Money(1248 * 704 * 24 * 5 / 1024)},
		// Tokens beside the length and picture the same answer reports: up to twice that
		// video's, as reported; past it, that video's.
		{"108,900 tokens of 5 s at 720p", tokens, Usage{VideoTokens: 108_900, VideoSeconds: 5, FPS: 24, Resolution: "720p", Ratio: "16:9"}, 108_900},
		{"twice 5 s at 720p", tokens, Usage{VideoTokens: 2 * 102_960, VideoSeconds: 5, FPS: 24, Resolution: "720p", Ratio: "16:9"}, 2 * 102_960},
		{"99,999,999 tokens of 5 s at 720p", tokens, Usage{VideoTokens: 99_999_999, VideoSeconds: 5, FPS: 24, Resolution: "720p", Ratio: "16:9"}, 102_960},
		{"99,999,999 tokens of 5 s, no picture", tokens, Usage{VideoTokens: 99_999_999, VideoSeconds: 5}, 102_960},
		{"tokens of 5 s at the largest picture", tokens, Usage{VideoTokens: 8192 * 8192 * 60 * 5 / 1024, VideoSeconds: 5}, 8192 * 8192 * 60 * 5 / 1024},
		{"30,000,000 tokens of 5 s at a band without a size here", tokens, Usage{VideoTokens: 30_000_000, VideoSeconds: 5, Resolution: "999p"}, 30_000_000},
	} {
		if got := tc.price.Settle(estimate, tc.actual); got != tc.want {
			t.Errorf("%s: charged %d, want %d", tc.name, got, tc.want)
		}
	}
}
