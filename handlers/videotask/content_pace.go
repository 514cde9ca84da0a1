package videotask

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// A client's read of a task's content (the owner-only content endpoint) makes calls to the
// upstream's API with the operator's credential: MiniMax's reads the task and resolves its file
// (two calls), OpenAI's asks for the video's content, Gemini's reads the operation. Those calls
// keep to the upstream's max_rps, as the watcher's and a poll's reads do: a client that asks for
// the content of a finished task many times at once cannot spend the operator's rate limit at the
// provider (whose 429s would fall on every tenant's creates and reads).

// contentCaller makes the calls of one content read. Its first API call takes a share of the
// upstream's pace that is free now, or the read is refused at once with errContentPaced (429,
// Retry-After: when the next share comes); the read's later calls (MiniMax's file lookup) wait
// for theirs, at most providers.MaxShareWait, so that a read once started is not refused half
// way. No read starts while the upstream is paused after a 429, and a 429 of these calls pauses
// it, as any read's does. A download from an address the provider gave (signed storage) is not
// an API call and takes no share.
type contentCaller struct {
	caller
	h     *Handler
	calls int
}

// errContentPaced refuses a content read past the upstream's max_rps, or while the upstream is
// paused after a 429.
var errContentPaced = apierror.New(http.StatusTooManyRequests, "rate_limit_exceeded",
	"the provider's rate for reading this task's content is in use: try again after the Retry-After delay")

// share takes the share of one API call of the read, or answers errContentPaced with the time
// to wait.
func (c *contentCaller) share(ctx context.Context) error {
	c.calls++
	if c.calls > 1 && c.u.WaitShare(ctx) {
		return nil
	}
	granted, retry := c.u.Take(1)
	if granted == 1 {
		return nil
	}
	return errContentPaced.WithRetryAfter(max(retry.Sub(c.u.Now()), time.Second))
}

func (c *contentCaller) Call(ctx context.Context, method, rel string, body []byte, header http.Header) (upstream.Answer, error) {
	if err := c.share(ctx); err != nil {
		return upstream.Answer{}, err
	}
	ans, err := c.caller.Call(ctx, method, rel, body, header)
	if err == nil {
		c.h.throttledBy(c.u, ans)
	}
	return ans, err
}

func (c *contentCaller) Open(ctx context.Context, rawURL string) (*http.Response, error) {
	if !strings.Contains(rawURL, "://") {
		// The upstream's own endpoint (OpenAI's videos/{id}/content): an API call.
		if err := c.share(ctx); err != nil {
			return nil, err
		}
	}
	return c.caller.Open(ctx, rawURL)
}
