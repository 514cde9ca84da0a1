package upstream

import (
	"context"
	"errors"
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

// bound returns ctx bounded by the HTTP client's Timeout, which Call applies itself (see send),
// and by Until: one deadline, the earlier, and so one timer per call. Cancel it once the answer's
// body is read.
func (c Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := c.Until
	if c.HTTP.Timeout > 0 {
		if d := time.Now().Add(c.HTTP.Timeout); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	if deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// send sends a request, bounded by bound, straight through the HTTP client's transport: Call
// follows no redirect (a 3xx answer comes back as it is, whatever the client's CheckRedirect
// says), so http.Client's redirect bookkeeping (a copy of the headers for each request, a
// deadline of its own) is work for nothing. A client with a cookie jar, or a URL with user
// information (which http.Client turns into basic authentication), goes through http.Client,
// a copy of it that follows no redirect either: http.Client would send the provider's
// credential headers on to the redirect's host. An answer without a body (from a custom
// transport) is taken as an empty one.
func (c Client) send(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if c.HTTP.Jar != nil || req.URL.User != nil {
		hc := *c.HTTP
		hc.CheckRedirect = noRedirect
		resp, err = hc.Do(req)
	} else {
		rt := c.HTTP.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		resp, err = rt.RoundTrip(req)
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errNoResponse
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

// errNoResponse is the error of a transport that answered neither a response nor an error.
var errNoResponse = errors.New("the HTTP transport returned no response")

// noRedirect is the CheckRedirect of provider calls: the 3xx answer comes back as it is.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

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
		Timeout:       o.Timeout,
		Transport:     t,
		CheckRedirect: noRedirect,
	}
}
