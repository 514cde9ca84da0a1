package videotask

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// The content endpoint's calls to a provider share its max_rps fairly:
//   - each call made with the operator's credential (a lookup of the result, a download from the
//     upstream's own origin) takes a share of the upstream's max_rps within the part that content
//     reads may take (providers.ContentPart), waiting up to contentWait for it, and is otherwise
//     answered 429 with the Retry-After of the next share; so the watcher keeps the rest, and
//     content reads queue among the watcher's reads instead of finding every share taken;
//   - at an upstream with max_rps, an account makes one content lookup at a time (contentTurns):
//     its other reads wait their turn (as long as the client waits), so one account's reads
//     cannot take the shares of another's;
//   - concurrent reads of one task share one lookup (contentLookups), and reuse the address it
//     found while its signature lets them (reusableUntil), so that many readers of one video make
//     one lookup.

// contentWait bounds how long a content read waits for the share of each call.
const contentWait = 5 * time.Second

// maxContentReuse bounds how long a looked-up address is reused, and maxFoundResults how many
// are kept.
const (
	maxContentReuse = 5 * time.Minute
	maxFoundResults = 1024
)

var (
	// contentLookups shares the lookup of one task's result among its concurrent reads, across
	// every Handler of the process.
	contentLookups singleflight.Group
	contentTurns   = turnBoard{turns: map[turnKey]*turn{}}
	foundResults   = foundBoard{found: map[string]foundResult{}}
)

// errContentBusy is a content read whose share did not come within contentWait.
type errContentBusy struct{ retry time.Duration }

func (e errContentBusy) Error() string { return "the provider's calls for downloads are taken" }

// contentBusy is the client's answer to a content read that met errContentBusy or the
// upstream's pause after a 429: 429 with the Retry-After of its next share.
func contentBusy(retry time.Duration) error {
	return apierror.New(http.StatusTooManyRequests, "rate_limit_exceeded",
		"the provider's calls for downloads are all taken at the moment; retry after the Retry-After delay").
		WithRetryAfter(max(retry, time.Second))
}

// contentCaller is the caller of the content endpoint: every call to the upstream's API, and
// every download from its own origin (which carries the credential), takes a content share.
// (Such a download is made in the account's turn too: see openContent.)
type contentCaller struct{ caller }

func (c contentCaller) Call(ctx context.Context, method, rel string, body []byte, header http.Header) (upstream.Answer, error) {
	if err := c.share(ctx); err != nil {
		return upstream.Answer{}, err
	}
	return c.caller.Call(ctx, method, rel, body, header)
}

func (c contentCaller) Open(ctx context.Context, rawURL string) (*http.Response, error) {
	if !strings.Contains(rawURL, "://") || sameOrigin(rawURL, c.u) {
		if err := c.share(ctx); err != nil {
			return nil, err
		}
	}
	return c.caller.Open(ctx, rawURL)
}

func (c contentCaller) share(ctx context.Context) error {
	if ok, retry := c.u.WaitContentShare(ctx, contentWait); !ok {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errContentBusy{retry: retry.Sub(c.u.Now())}
	}
	return nil
}

// sameOrigin reports whether rawURL is on u's origin (scheme, host and port), where Open sends
// the credential.
func sameOrigin(rawURL string, u *providers.Upstream) bool {
	target, err := url.Parse(rawURL)
	return err == nil && u.BaseURL != nil && strings.EqualFold(target.Scheme, u.BaseURL.Scheme) &&
		strings.EqualFold(hostPort(target), hostPort(u.BaseURL))
}

// hostPort is a URL's host with its port, the scheme's default when it names none.
func hostPort(v *url.URL) string {
	if v.Port() != "" {
		return v.Host
	}
	if strings.EqualFold(v.Scheme, "https") {
		return v.Hostname() + ":443"
	}
	return v.Hostname() + ":80"
}

// openContent opens a succeeded task's credentialed video for its owner's content read (see
// above). Errors are openResult's, and the 429 of contentBusy.
func (h *Handler) openContent(ctx context.Context, a adaptor.Adaptor, u *providers.Upstream, t storage.Task) (*http.Response, error) {
	c := contentCaller{h.caller(u)}
	open := func(address string) (*http.Response, error) {
		if !sameOrigin(address, u) {
			return c.Open(ctx, address) // signed storage: no call of the provider's
		}
		var resp *http.Response
		err := contentTurns.with(ctx, u, t.Account, func() error {
			var err error
			resp, err = c.Open(ctx, address)
			return err
		})
		return resp, err
	}
	if address, ok := foundResults.get(t.ID, u.Now()); ok {
		resp, err := open(address)
		if err == nil || ctx.Err() != nil || errors.As(err, new(errContentBusy)) {
			return resp, h.contentError(u, err)
		}
		foundResults.drop(t.ID) // refused (expired early): look it up again
	}
	var resp *http.Response
	var err error
	if _, ok := a.(adaptor.Locator); !ok {
		// A protocol that opens its results in one call (openai), in the account's turn; or
		// one whose results are plain URLs (ErrUnsupported), looked up by a read below.
		err = contentTurns.with(ctx, u, t.Account, func() error {
			resp, err = a.Content(ctx, c, t.UpstreamID)
			return err
		})
		if !errors.Is(err, adaptor.ErrUnsupported) {
			return resp, h.contentError(u, err)
		}
	}
	address, err := h.locateShared(ctx, c, a, u, t)
	if err == nil {
		resp, err = open(address)
	}
	return resp, h.contentError(u, err)
}

// locateShared looks up the address of t's result once for all its concurrent reads (the first
// of them makes the lookup, in its account's turn), and keeps it for the reads that follow while
// its signature allows.
func (h *Handler) locateShared(ctx context.Context, c contentCaller, a adaptor.Adaptor, u *providers.Upstream, t storage.Task) (string, error) {
	for {
		ch := contentLookups.DoChan(fmt.Sprintf("%p/%s", u, t.UpstreamID), func() (_ any, err error) {
			// The lookup runs on singleflight's goroutine, where no server recovers a panic
			// (singleflight panics again there, ending the process): it is this lookup's 502.
			defer func() {
				if p := recover(); p != nil {
					err = h.lookupPanicked(t, p)
				}
			}()
			var address string
			err = contentTurns.with(ctx, u, t.Account, func() error {
				var err error
				address, err = h.locate(ctx, c, u, a, t)
				return err
			})
			if ctx.Err() != nil {
				return "", ctx.Err() // the reads waiting for it lead one anew
			}
			if err == nil {
				if until, ok := reusableUntil(address, u.Now()); ok {
					foundResults.put(t.ID, address, until, u.Now())
				}
			}
			return address, err
		})
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case r := <-ch:
			if r.Err != nil && ctx.Err() == nil && errors.Is(r.Err, context.Canceled) {
				continue // the read that led the lookup left: lead one anew
			}
			address, _ := r.Val.(string)
			return address, r.Err
		}
	}
}

// lookupPanicked logs a content lookup's panic p, with its stack, and is its readers' answer:
// 502 invalid_response.
func (h *Handler) lookupPanicked(t storage.Task, p any) error {
	if h.Logger != nil {
		h.Logger.Error("a content lookup panicked; its readers are answered 502",
			zap.String("task_id", t.ID), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
	}
	return apierror.New(http.StatusBadGateway, upstream.ErrUnreadable.Code,
		"the gateway could not look up this task's video; try again later")
}

// locate is the lookup of t's result: the adaptor's Locate, or, for a protocol whose results are
// plain URLs, a read of the task whose result URL carries the credential (ErrUnsupported when
// it carries none: the client fetches it itself).
func (h *Handler) locate(ctx context.Context, c adaptor.Caller, u *providers.Upstream, a adaptor.Adaptor, t storage.Task) (string, error) {
	if l, ok := a.(adaptor.Locator); ok {
		return l.Locate(ctx, c, t.UpstreamID)
	}
	r, err := canonicalRequest(t)
	if err != nil {
		return "", err
	}
	st, err := a.Read(ctx, c, t.UpstreamID, r)
	if err != nil {
		return "", err
	}
	if st.Status != adaptor.StatusSucceeded || st.VideoURL == "" || !carriesCredential(st.VideoURL, u.Credentials()) {
		return "", adaptor.ErrUnsupported
	}
	return st.VideoURL, nil
}

// contentError maps a content read's error: a turn or share that did not come, and the
// provider's 429 (which pauses the upstream, as a read's does), are 429 with the Retry-After of
// the next share; the rest as openResult maps them.
func (h *Handler) contentError(u *providers.Upstream, err error) error {
	var busy errContentBusy
	switch {
	case err == nil:
		return nil
	case errors.As(err, &busy):
		return contentBusy(busy.retry)
	}
	if until, ok := pausedBy(err, u); ok {
		return contentBusy(until.Sub(u.Now()))
	}
	return resultError(err)
}

// pausedBy pauses u when err is the provider's 429 (an adaptor's *adaptor.Throttled, MiniMax's
// 1002 included, or a download's 429 refusal) and says until when.
func pausedBy(err error, u *providers.Upstream) (time.Time, bool) {
	if retryAfter, ok := adaptor.IsThrottled(err, u.Now()); ok {
		return u.Throttled(retryAfter), true
	}
	var refusal *apierror.Error
	if errors.As(err, &refusal) && refusal.Status == http.StatusTooManyRequests {
		return u.Throttled(refusal.RetryAfter), true
	}
	return time.Time{}, false
}

// reusableUntil is until when a looked-up address may be opened again: a signed address that
// says when its signature ends (X-Amz-Date with X-Amz-Expires, X-Goog-Date with X-Goog-Expires,
// or Expires in Unix seconds) until ten seconds before that, at most maxContentReuse from now.
// Any other address is used only by the reads that waited for its lookup.
func reusableUntil(address string, now time.Time) (time.Time, bool) {
	v, err := url.Parse(address)
	if err != nil {
		return time.Time{}, false
	}
	q := v.Query()
	var end time.Time
	for _, p := range [][2]string{{"X-Amz-Date", "X-Amz-Expires"}, {"X-Goog-Date", "X-Goog-Expires"}} {
		signed, err := time.Parse("20060102T150405Z", q.Get(p[0]))
		secs, secsErr := strconv.ParseInt(q.Get(p[1]), 10, 32)
		if err == nil && secsErr == nil && secs > 0 {
			end = signed.Add(time.Duration(secs) * time.Second)
		}
	}
	if end.IsZero() {
		unix, err := strconv.ParseInt(q.Get("Expires"), 10, 64)
		if err != nil || unix <= 0 || unix > 1<<40 {
			return time.Time{}, false
		}
		end = time.Unix(unix, 0)
	}
	until := end.Add(-10 * time.Second)
	if limit := now.Add(maxContentReuse); until.After(limit) {
		until = limit
	}
	return until, until.After(now)
}
