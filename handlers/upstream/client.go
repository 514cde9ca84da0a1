package upstream

import (
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
