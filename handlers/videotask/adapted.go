package videotask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/dashscope"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/gemini"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/kling"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/minimax"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/openai"
	"github.com/mediagw/mediagw/storage"
)

// adaptors are the adaptors of the protocols other than Ark, by protocol name. An Ark provider's
// answers pass through this package unchanged (query.go, batch.go).
var adaptors = map[string]adaptor.Adaptor{
	adaptor.DashScope: dashscope.Adaptor{},
	adaptor.Gemini:    gemini.Adaptor{},
	adaptor.Kling:     kling.Adaptor{},
	adaptor.MiniMax:   minimax.Adaptor{},
	adaptor.OpenAI:    openai.Adaptor{},
}

// Protocols lists the names a provider's `protocol` may take, "ark" first.
func Protocols() []string {
	return []string{adaptor.Ark, adaptor.DashScope, adaptor.Gemini, adaptor.Kling, adaptor.MiniMax, adaptor.OpenAI}
}

// adaptorOf is the adaptor of a provider's protocol; false for Ark.
func adaptorOf(p *providers.Provider) (adaptor.Adaptor, bool) {
	a, ok := adaptors[p.Protocol]
	return a, ok
}

// taskAdaptor is the adaptor that follows a task made through one (UpstreamID set): its
// provider's protocol's. False for an Ark task, and for a task whose provider no longer speaks a
// protocol with an adaptor (then it cannot be followed: see orphaned).
func (h *Handler) taskAdaptor(t storage.Task) (adaptor.Adaptor, bool) {
	if t.UpstreamID == "" {
		return nil, false
	}
	p, ok := h.Catalog.Provider(t.Provider)
	if !ok {
		return nil, false
	}
	return adaptorOf(p)
}

// caller makes an adaptor's calls to one upstream (see adaptor.Caller).
type caller struct {
	client upstream.Client
	u      *providers.Upstream
}

func (c caller) Call(ctx context.Context, method, rel string, body []byte, header http.Header) (upstream.Answer, error) {
	return c.client.CallWith(ctx, c.u, method, rel, body, header)
}

func (c caller) Open(ctx context.Context, rawURL string) (*http.Response, error) {
	if !strings.Contains(rawURL, "://") {
		rawURL = c.u.Endpoint(rawURL) // the upstream's own endpoint, which takes its credential
	}
	return c.client.Open(ctx, c.u, rawURL)
}

func (h *Handler) caller(u *providers.Upstream) caller { return caller{client: h.upstream(), u: u} }

// createCaller is the caller of an adaptor's create: it notes a 429 answer and its Retry-After
// (by the upstream's clock), which the adaptor's error, a refusal, does not carry.
type createCaller struct {
	caller
	throttled  bool
	retryAfter time.Duration
}

func (c *createCaller) Call(ctx context.Context, method, rel string, body []byte, header http.Header) (upstream.Answer, error) {
	ans, err := c.caller.Call(ctx, method, rel, body, header)
	if err == nil && ans.Status == http.StatusTooManyRequests {
		c.throttled, c.retryAfter = true, upstream.RetryAfter(ans.Header, c.u.Now())
	}
	return ans, err
}

// launchAdapted creates the task r (the create request read for the adaptor, with the model's
// upstream name) through the adaptor on the first of the provider's upstreams (in its order for
// account) that takes it, moving on only when nothing was created there (no connection, a
// 429), and returns the gateway's id for it, the provider's id, the canonical request as stored
// and the upstream.
func (h *Handler) launchAdapted(ctx context.Context, account string, a adaptor.Adaptor, p *providers.Provider, r adaptor.Request) (taskID, upstreamID string, canonical json.RawMessage, u *providers.Upstream, err error) {
	if canonical, err = json.Marshal(r); err != nil {
		return "", "", nil, nil, err
	}
	order, wait := p.Order(account)
	if len(order) == 0 {
		return "", "", nil, nil, providers.NoUpstream(p, wait)
	}
	for _, u = range order {
		u.Spend() // a create counts towards the upstream's max_rps, never waits for it
		c := &createCaller{caller: h.caller(u)}
		upstreamID, err = a.Create(ctx, c, r)
		var refusal *apierror.Error
		switch {
		case errors.Is(err, upstream.ErrRefused):
			u.Failed(account, "connection refused", 0)
			continue
		case err != nil && c.throttled, errors.As(err, &refusal) && refusal.Status == http.StatusTooManyRequests:
			// The account backs off for its Retry-After. The upstream's reads go on: providers
			// limit creates and reads apart.
			u.Failed(account, "HTTP 429", c.retryAfter)
			continue
		case errors.As(err, new(*adaptor.Malformed)):
			// An answer the adaptor cannot use (a member of another type than the provider's
			// reference gives it) is unreadable, as one that is not JSON is: 502.
			return "", "", nil, u, upstream.ErrUnreadable
		case err != nil:
			return "", "", nil, u, err
		}
		u.Succeeded(account)
		return newTaskID(), upstreamID, canonical, u, nil
	}
	return "", "", nil, u, err
}

// newTaskID is the gateway's id of a task made through an adaptor: "cgt-" and 24 random hex
// digits, the form of an Ark task id, so that clients see one kind of id whatever the provider.
func newTaskID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return "cgt-" + hex.EncodeToString(b)
}

// abandonAdapted cancels upstream a task whose ownership could not be recorded, and reports
// whether the provider confirmed it.
func (h *Handler) abandonAdapted(a adaptor.Adaptor, u *providers.Upstream, upstreamID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.upstreamTimeout())
	defer cancel()
	return a.Cancel(ctx, h.caller(u), upstreamID) == nil
}

// expireQueued cancels at its provider a task the expiry found queued, and reports whether its
// hold is charged its estimate. A confirmed cancel releases it. A refused one does not say the
// provider may make the task (it may have failed or been cancelled meanwhile, which a provider
// refuses to cancel too): the task is read again, and released when it reads failed, cancelled
// or expired (made nothing); charged when it reads anything else (running, succeeded, still
// queued, a state no rule maps) or cannot be read.
func (h *Handler) expireQueued(a adaptor.Adaptor, u *providers.Upstream, upstreamID string, r adaptor.Request) (charge bool) {
	if h.abandonAdapted(a, u, upstreamID) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.upstreamTimeout())
	defer cancel()
	st, err := a.Read(ctx, h.caller(u), upstreamID, r)
	if err != nil {
		return true
	}
	switch st.Status {
	case adaptor.StatusFailed, adaptor.StatusCancelled, adaptor.StatusExpired:
		return false
	}
	return true
}
