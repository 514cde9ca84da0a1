package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/mediagw/mediagw/handlers/upstream"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestUsageSeconds: a finished video is billed by the seconds the API reported; without them,
// by what the create asked the API for: the offered length nearest the duration (5 is 4, 6 is
// 8), and the API's default 4 where none was sent, never a length the API does not make.
func TestUsageSeconds(t *testing.T) {
	for _, tc := range []struct {
		reported, requested, want int64
	}{
		{reported: 8, requested: 4, want: 8},
		{requested: 12, want: 12},
		{requested: 0, want: 4},
		{requested: 10, want: 12},
		{requested: 5, want: 4},
		{requested: 15, want: 12},
	} {
		got := usage(adaptor.State{Duration: tc.reported}, adaptor.Request{Duration: tc.requested})
		if got.VideoSeconds != tc.want || got.Requests != 1 {
			t.Errorf("reported %d, requested %d: billed %d s (requests %d), want %d s", tc.reported, tc.requested, got.VideoSeconds, got.Requests, tc.want)
		}
	}
}

// TestSecondsSent: every duration the contract allows is sent as a length the API takes (4, 8 or
// 12: the nearest, the longer of two equally near), and Plan, which the hold counts, names the
// length sent; -1 sends none, and plans the API's default 4.
func TestSecondsSent(t *testing.T) {
	want := map[int64]string{-1: "", 1: "4", 2: "4", 3: "4", 4: "4", 5: "4", 6: "8", 7: "8", 8: "8", 9: "8",
		10: "12", 11: "12", 12: "12", 13: "12", 14: "12", 15: "12"}
	for d, seconds := range want {
		var rec recording
		r := adaptor.Request{Model: "sora-2", Prompt: "a heron", Duration: d}
		if _, err := (Adaptor{}).Create(context.Background(), &rec, r); err != nil {
			t.Fatal(err)
		}
		var sent struct{ Seconds *string }
		if err := json.Unmarshal(rec.body, &sent); err != nil {
			t.Fatal(err)
		}
		got := ""
		if sent.Seconds != nil {
			got = *sent.Seconds
		}
		if got != seconds {
			t.Errorf("duration %d: sent seconds %q, want %q", d, got, seconds)
		}
		planned := cmp.Or(seconds, "4")
		if p := (Adaptor{}).Plan(r); strconv.FormatInt(p.Seconds, 10) != planned {
			t.Errorf("duration %d: planned %d s, want %s", d, p.Seconds, planned)
		}
	}
}

// recording is an adaptor.Caller that keeps the body of its last call and answers a create.
type recording struct{ body []byte }

func (c *recording) Call(_ context.Context, _, _ string, body []byte, _ http.Header) (upstream.Answer, error) {
	c.body = body
	return upstream.Answer{Status: http.StatusOK, Body: []byte(`{"id":"video_1","object":"video","status":"queued"}`)}, nil
}

func (*recording) Open(context.Context, string) (*http.Response, error) {
	return nil, adaptor.ErrNotFound
}
