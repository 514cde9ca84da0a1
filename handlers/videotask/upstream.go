package videotask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
)

// maxUpstreamBody bounds how much of an upstream answer is read.
const maxUpstreamBody = 4 << 20

var (
	errUpstreamTimeout     = apierror.New(http.StatusGatewayTimeout, "upstream_timeout", "the video generation backend did not answer in time; retry later")
	errUpstreamUnreachable = apierror.New(http.StatusBadGateway, "invalid_response", "the video generation backend could not be reached")
	errUpstreamUnreadable  = apierror.New(http.StatusBadGateway, "invalid_response", "the video generation backend returned an unrecognisable response")
)

// upstreamAnswer is a complete upstream response.
type upstreamAnswer struct {
	status int
	header http.Header
	body   []byte
}

// call sends one request to a provider's task API with the provider's credentials. Transport
// failures come back as contract errors (502/504).
func (h *Handler) call(ctx context.Context, p *providers.Provider, method, rel string, body []byte) (upstreamAnswer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.Endpoint(rel), rd)
	if err != nil {
		return upstreamAnswer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	p.SetCredentials(req.Header)
	resp, err := h.Client.Do(req)
	if err != nil {
		if isTimeout(err) {
			return upstreamAnswer{}, errUpstreamTimeout
		}
		h.Logger.Warn("video task upstream unreachable", h.providerField(p), errorField(err))
		return upstreamAnswer{}, errUpstreamUnreachable
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err != nil {
		if isTimeout(err) {
			return upstreamAnswer{}, errUpstreamTimeout
		}
		return upstreamAnswer{}, errUpstreamUnreadable
	}
	if len(b) > maxUpstreamBody {
		return upstreamAnswer{}, errUpstreamUnreadable
	}
	return upstreamAnswer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// upstreamError turns a non-2xx upstream answer into a task-shape error. The upstream's own 4xx is
// passed on with its code and message; a 5xx becomes 502.
func upstreamError(a upstreamAnswer) *apierror.Error {
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	parsed := json.Unmarshal(a.body, &e) == nil && e.Error != nil && e.Error.Message != ""
	status := a.status
	if status < 400 || status >= 500 {
		status = http.StatusBadGateway
	}
	if !parsed {
		if status == http.StatusBadGateway {
			return errUpstreamUnreadable
		}
		return apierror.New(status, "upstream_error", fmt.Sprintf("the video generation backend refused the request (HTTP %d)", a.status))
	}
	code := e.Error.Code
	if code == "" {
		code = "upstream_error"
	}
	return apierror.New(status, code, e.Error.Message)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
