package upstream

import (
	"context"
	"net"
	"net/http"
	"time"
)

// DefaultTimeout bounds each provider call when no timeout is configured.
const DefaultTimeout = 60 * time.Second

// ClientOptions shape the HTTP client of the gateway's own provider calls.
type ClientOptions struct {
	// Timeout bounds each call, connection and answer included. Default: DefaultTimeout.
	Timeout time.Duration
	// ProxyFromEnvironment sends calls through the proxy named by HTTPS_PROXY, HTTP_PROXY and
	// NO_PROXY. Off by default: the process environment does not decide where the operator's
	// provider credentials go.
	ProxyFromEnvironment bool
}

// bound returns ctx bounded by the HTTP client's Timeout, which Call applies itself (see send);
// cancel it once the answer's body is read.
func (c Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.HTTP.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.HTTP.Timeout)
}

// send sends a request, bounded by bound, straight through the HTTP client's transport: Call
// follows no redirect (a 3xx answer comes back as it is, whatever the client's CheckRedirect
// says), so http.Client's redirect bookkeeping (a copy of the headers for each request, a
// deadline of its own) is work for nothing. A client with a cookie jar, or a URL with user
// information (which http.Client turns into basic authentication), goes through http.Client.
func (c Client) send(req *http.Request) (*http.Response, error) {
	if c.HTTP.Jar != nil || req.URL.User != nil {
		return c.HTTP.Do(req)
	}
	rt := c.HTTP.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	return rt.RoundTrip(req)
}

// NewHTTPClient returns the client for provider calls. It follows no redirect: a 3xx answer
// comes back as it is (Call turns it into a 502), so a provider credential is never sent to a
// host the operator did not configure. It uses a proxy only when the options say so.
func NewHTTPClient(o ClientOptions) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	t := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if o.ProxyFromEnvironment {
		t.Proxy = http.ProxyFromEnvironment
	}
	return &http.Client{
		Timeout:   o.Timeout,
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
