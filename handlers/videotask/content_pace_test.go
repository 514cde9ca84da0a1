package videotask

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// A content read's calls keep to the upstream's max_rps (5 here, one call at once): a read whose
// first call finds no free share is refused at once (429, Retry-After) without calling the
// provider; a download from an absolute address takes no share, the upstream's own endpoint one;
// and a provider's 429 pauses the upstream, so no read starts until its Retry-After.
func TestContentReadsKeepToMaxRPS(t *testing.T) {
	up := &pacedUpstream{}
	now := time.Unix(1_800_000_000, 0)
	h, u := newPacedHandler(t, up, "", &now)
	ctx := context.Background()
	read := func() *contentCaller { return &contentCaller{caller: h.caller(u), h: h} }
	refused := func(err error, least time.Duration) {
		t.Helper()
		var e *apierror.Error
		if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.RetryAfter < least {
			t.Fatalf("err = %v; want 429 with a Retry-After of at least %v", err, least)
		}
	}
	if _, err := read().Call(ctx, http.MethodGet, "contents/generations/tasks/cgt-1", nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := read().Call(ctx, http.MethodGet, "contents/generations/tasks/cgt-1", nil, nil)
	refused(err, time.Second)
	_, err = read().Open(ctx, "contents/generations/tasks/cgt-1")
	refused(err, time.Second)
	if n := up.readCount(); n != 1 {
		t.Fatalf("the provider was read %d times; want once, the refused reads not at all", n)
	}
	resp, err := read().Open(ctx, u.Endpoint("files/video.mp4"))
	if err != nil {
		t.Fatalf("a download from an absolute address: %v", err)
	}
	resp.Body.Close()

	now = now.Add(200 * time.Millisecond) // max_rps 5: the next share
	up.throttleNext("7")
	if _, err := read().Call(ctx, http.MethodGet, "contents/generations/tasks/cgt-1", nil, nil); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	_, err = read().Call(ctx, http.MethodGet, "contents/generations/tasks/cgt-1", nil, nil)
	refused(err, 5*time.Second)
	now = now.Add(6 * time.Second)
	if _, err := read().Call(ctx, http.MethodGet, "contents/generations/tasks/cgt-1", nil, nil); err != nil {
		t.Fatalf("after the provider's Retry-After: %v", err)
	}
}
