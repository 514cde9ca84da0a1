package dashscope

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/upstream"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/adaptortest"
)

// TestReadDurationOnlyWhenUsable: a succeeded task's usage.video_duration (or duration, the
// larger of the two) is its length in whole seconds, the fraction dropped; one that is not a
// positive number an int64 holds (negative, 1e300, past 2^63, past float64's range) is not
// reported (0), and the answer is still read: never a wrapped or negative length.
func TestReadDurationOnlyWhenUsable(t *testing.T) {
	for usage, want := range map[string]int64{
		`"video_duration":5`:                     5,
		`"video_duration":5.9`:                   5,
		`"duration":10`:                          10,
		`"video_duration":5,"duration":10`:       10,
		`"video_duration":-5`:                    0,
		`"video_duration":-5,"duration":-3`:      0,
		`"video_duration":1e300`:                 0,
		`"video_duration":1e300,"duration":5`:    5,
		`"video_duration":9223372036854775808`:   0,
		`"video_duration":1e400`:                 0,
		`"video_duration":-1e400,"duration":4`:   4,
		`"video_duration":null`:                  0,
		`"video_duration":"6"`:                   6,
		`"video_duration":1e18`:                  1e18, // within an int64: billing refuses it (see billing.Price.Possible)
		`"video_duration":0.5`:                   0,
		`"video_duration":9.3e18,"duration":1e1`: 10,
	} {
		body := `{"request_id":"r","output":{"task_id":"t1","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/v.mp4"},"usage":{` + usage + `,"video_ratio":"1280*720"}}`
		s, err := Adaptor{}.Read(context.Background(), adaptortest.Answering(body), "t1", adaptor.Request{})
		if err != nil || s.Status != adaptor.StatusSucceeded {
			t.Fatalf("usage {%s}: %+v, %v", usage, s, err)
		}
		if s.Duration != want || s.Usage.VideoSeconds != want {
			t.Errorf("usage {%s}: read %d (usage %d), want %d", usage, s.Duration, s.Usage.VideoSeconds, want)
		}
	}
}

// recording is an adaptor.Caller that keeps the body of each call and answers a create.
type recording struct{ bodies [][]byte }

func (c *recording) Call(_ context.Context, _, _ string, body []byte, _ http.Header) (upstream.Answer, error) {
	c.bodies = append(c.bodies, body)
	return upstream.Answer{Status: http.StatusOK, Body: []byte(`{"request_id":"r","output":{"task_id":"t1","task_status":"PENDING"}}`)}, nil
}

func (*recording) Open(context.Context, string) (*http.Response, error) {
	return nil, adaptor.ErrNotFound
}

// TestCreateSendsTheTierTheModelOffers: the resolution is always sent, so that Wan's default
// (1920*1080) never stands in for the contract's 720p: a ratio without a resolution is that ratio
// at 720p where the model offers 720P, else at its nearest tier (the higher one of two equally
// near); a resolution the model lacks becomes its nearest tier. The plan, which the hold counts,
// names the same tier.
func TestCreateSendsTheTierTheModelOffers(t *testing.T) {
	frame := []adaptor.Media{{Kind: "image", Role: adaptor.RoleFirstFrame, URL: "https://img.example/a.png"}}
	for _, c := range []struct {
		model, resolution, ratio string
		media                    []adaptor.Media
		want, tier               string
	}{
		{model: "wan2.5-t2v-preview", ratio: "9:16", want: `"size":"720*1280"`, tier: "720p"},
		{model: "wan2.5-t2v-preview", want: `"size":"1280*720"`, tier: "720p"},
		{model: "wan2.2-t2v-plus", ratio: "9:16", want: `"size":"1080*1920"`, tier: "1080p"},
		{model: "wan2.2-t2v-plus", ratio: "4:3", want: `"size":"1632*1248"`, tier: "1080p"},
		{model: "wan2.2-t2v-plus", resolution: "720p", ratio: "1:1", want: `"size":"1440*1440"`, tier: "1080p"},
		{model: "wan2.2-t2v-plus", resolution: "480p", ratio: "1:1", want: `"size":"624*624"`, tier: "480p"},
		{model: "wan2.1-t2v-turbo", resolution: "1080p", ratio: "9:16", want: `"size":"720*1280"`, tier: "720p"},
		{model: "wanx2.1-t2v-turbo", resolution: "4k", want: `"size":"1280*720"`, tier: "720p"},
		{model: "wan2.1-t2v-plus", resolution: "480p", ratio: "adaptive", want: `"size":"1280*720"`, tier: "720p"},
		{model: "wan2.6-t2v", resolution: "480p", ratio: "3:4", want: `"size":"832*1088"`, tier: "720p"},
		{model: "wan-next-t2v", ratio: "1:1", want: `"size":"960*960"`, tier: "720p"},
		{model: "wan-next-t2v", resolution: "4k", want: `"size":"1920*1080"`, tier: "1080p"},
		{model: "wan2.2-i2v-plus", ratio: "9:16", media: frame, want: `"resolution":"1080P"`, tier: "1080p"},
		{model: "wan2.2-i2v-flash", media: frame, want: `"resolution":"720P"`, tier: "720p"},
	} {
		r := adaptor.Request{Model: c.model, Prompt: "a heron", Resolution: c.resolution, Ratio: c.ratio, Media: c.media}
		var rec recording
		if _, err := (Adaptor{}).Create(context.Background(), &rec, r); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if len(rec.bodies) != 1 || !strings.Contains(string(rec.bodies[0]), c.want) {
			t.Errorf("%s %q %q: sent %s, want %s", c.model, c.resolution, c.ratio, rec.bodies, c.want)
		}
		if plan := (Adaptor{}).Plan(r); plan.Resolution != c.tier {
			t.Errorf("%s %q %q: planned %+v, want %s", c.model, c.resolution, c.ratio, plan, c.tier)
		}
	}
}

// TestReadBillsThePlannedTierWithoutASize: a succeeded task whose usage reports no size is billed
// at the tier Create asked for (1080p for wan2.2-t2v-plus asked 720p), and answers no resolution.
func TestReadBillsThePlannedTierWithoutASize(t *testing.T) {
	body := `{"request_id":"r","output":{"task_id":"t1","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/v.mp4"},"usage":{"video_duration":5}}`
	s, err := Adaptor{}.Read(context.Background(), adaptortest.Answering(body), "t1", adaptor.Request{Model: "wan2.2-t2v-plus"})
	if err != nil || s.Usage.Resolution != "1080p" || s.Resolution != "" {
		t.Fatalf("read %+v, %v", s, err)
	}
}
