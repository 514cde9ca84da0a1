package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// maxOpenRedirects bounds the redirects Open follows.
const maxOpenRedirects = 3

// Open sends a GET to rawURL, an absolute http(s) URL that u returned as a result, and answers
// the response for the caller to stream and close. u's credential is sent only when rawURL is on
// u's own origin (scheme, host and port of its base URL; a Veo file URI); a URL elsewhere (a
// signed download address, such as MiniMax's) is fetched without it. A redirect (a file API
// sends its download to signed storage) is followed, up to maxOpenRedirects, without the
// credential: it goes to the first request only. A response other than 200 is closed and answered as the provider's
// refusal. The call is bounded by ctx only: a video's download takes as long as the client
// reading it. An address off the upstream's origin (another port of its host included), the
// first or a redirect's, is connected to only when it is public (see open_public.go): one that
// is not is ErrNotPublic.
func (c Client) Open(ctx context.Context, u *providers.Upstream, rawURL string) (*http.Response, error) {
	target, err := url.Parse(rawURL)
	if err != nil || target.User != nil || target.Scheme != "https" && target.Scheme != "http" || target.Host == "" {
		return nil, ErrUnreadable
	}
	credentialed := onUpstreamOrigin(target, u)
	for range maxOpenRedirects + 1 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return nil, ErrUnreadable
		}
		if credentialed {
			u.SetCredentials(req.Header)
		}
		var resp *http.Response
		if onUpstreamOrigin(target, u) {
			resp, err = c.send(req)
		} else {
			resp, err = offHostTransport.RoundTrip(req) // public addresses only: see open_public.go
		}
		if err != nil {
			if isTimeout(err) || timedOut(ctx) {
				return nil, ErrTimeout
			}
			c.Logger.Warn("upstream result unreachable", zap.String("upstream", u.Label()), zap.Error(WithoutURL(err)))
			if _, refused := errors.AsType[errNotPublic](err); refused {
				return nil, ErrNotPublic
			}
			return nil, ErrUnreachable
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		location := resp.Header.Get("Location")
		// The answer is read no further: a redirect's or a refusal's body is not streamed.
		if err := resp.Body.Close(); err != nil {
			c.Logger.Debug("closing an upstream answer", zap.Error(err))
		}
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || location == "" {
			return nil, Refusal(Answer{Status: resp.StatusCode, Header: resp.Header})
		}
		next, err := target.Parse(location)
		if err != nil || (next.Scheme != "https" && next.Scheme != "http") {
			return nil, ErrRedirected
		}
		// A redirect goes to signed storage, which takes no credential: it is never sent after
		// the first request, wherever the redirect points.
		credentialed = false
		target = next
	}
	return nil, ErrRedirected
}
