package videotask

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
)

func TestBilledUsage(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		want         billing.Usage
	}{
		{"ark succeeded", `{"id":"cgt-1","status":"succeeded","usage":{"completion_tokens":108900,"total_tokens":108900},` +
			`"resolution":"720p","ratio":"16:9","duration":5,"framespersecond":24}`,
			billing.Usage{VideoTokens: 108_900, VideoSeconds: 5, FPS: 24, Resolution: "720p", Ratio: "16:9"}},
		{"duration only", `{"status":"succeeded","duration":8,"resolution":"1080P"}`,
			billing.Usage{VideoSeconds: 8, Resolution: "1080p"}},
		{"nothing reported", `{"status":"succeeded","content":{}}`, billing.Usage{}},
		{"not JSON", `<html>`, billing.Usage{}},
		{"wrong types", `{"usage":{"completion_tokens":"many"},"duration":5}`, billing.Usage{}},
		{"negative numbers", `{"usage":{"completion_tokens":-5},"duration":-1}`, billing.Usage{}},
	} {
		if got := billedUsage([]byte(tc.result)); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
