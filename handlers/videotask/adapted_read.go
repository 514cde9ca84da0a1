package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/bounded"
	"github.com/mediagw/mediagw/storage"
)

// refreshAdapted is refresh for a task made through an adaptor: the adaptor reads the task, and
// its state is stored as an Ark answer (see adaptedAnswer) by the same compare-and-set as an Ark
// task's, whose winner releases, refunds and calls back. While a read's 429 pauses the upstream
// (readUpstream checks it), the stored answer is served and nothing is read; the backoff that
// failed creates start (providers.Upstream.CoolingUntil) keeps creates away and never pauses
// reads: providers limit creates and reads apart. onlyChanges and seen are readUpstream's: the
// watcher's read of an unchanged task writes nothing.
func (h *Handler) refreshAdapted(ctx context.Context, t storage.Task, a adaptor.Adaptor, u *providers.Upstream, onlyChanges bool, seen *answerMemo) (storage.Task, error) {
	r, err := canonicalRequest(t)
	if err != nil {
		return t, err
	}
	readAt := h.now().UnixNano()
	st, err := a.Read(ctx, h.caller(u), t.UpstreamID, r)
	if retryAfter, ok := adaptor.IsThrottled(err, u.Now()); ok {
		// The watcher and client polls leave the upstream alone while it cools down; the client
		// whose poll met the 429 gets the stored answer.
		u.Failed(t.Account, "HTTP 429", retryAfter)
		u.Throttled(retryAfter)
		h.Logger.Debug("provider throttled a task read; backing off", zap.String("task_id", t.ID),
			zap.String("upstream", u.Label()), zap.Duration("retry_after", retryAfter))
		return storedAnswer(t), nil
	}
	if errors.Is(err, adaptor.ErrNotFound) {
		if _, err := h.finishUnreachable(ctx, t, "its upstream does not know it"); err != nil {
			return t, err
		}
		return t, errTaskNotExist
	}
	var malformed *adaptor.Malformed
	if errors.As(err, &malformed) {
		return h.unusableAnswer(ctx, t, r, malformed)
	}
	if err != nil {
		return t, readRefused(err)
	}
	u.Succeeded(t.Account)
	u.Unthrottled()
	// A failed task's message is the provider's text, stored and answered to the client: like a
	// refusal's (adaptor.Refusal), it never carries the operator's credential.
	st = withoutCredentialsIn(st, u)
	if !storage.Terminal(st.Status) && h.now().After(executionDeadline(t, r)) {
		// No adaptor can send execution_expires_after, so the gateway keeps it: a task its
		// provider still reports unfinished (queued, running, or a state no rule maps) past it
		// is expired, once, by whoever wins the change (settle), watcher or client poll. Its
		// provider may still make it, and bill it: only a task the provider reports queued (not
		// started) is released, once the provider confirms its cancel (the one state a provider
		// cancels, as a client's cancel of a queued task); the winner of the change alone sends
		// that cancel. A task reported running (or in a state no rule maps) is charged its
		// estimate, and so is a queued one whose cancel is refused, unless it then reads failed,
		// cancelled or expired (expireQueued).
		return h.settle(ctx, t, verdict{
			status:  StatusExpired,
			code:    "task_expired",
			message: "the task did not finish within execution_expires_after (" + strconv.FormatInt(executionSeconds(r), 10) + " s)",
			logged:  "task expired: its provider reports it unfinished past execution_expires_after",
			fields:  []zap.Field{zap.String("provider_status", st.ProviderStatus)},
			won: func() (charge bool) {
				return st.Status != adaptor.StatusQueued || h.expireQueued(a, u, t.UpstreamID, r)
			},
		})
	}
	if st.Status == adaptor.StatusUnknown {
		h.Logger.Debug("provider task state not known; the task stays running",
			zap.String("task_id", t.ID), zap.String("provider_status", st.ProviderStatus))
	}
	var usage json.RawMessage
	if st.Status == adaptor.StatusSucceeded {
		usage = mustJSON(st.Usage)
	}
	return h.storeAnswerUsage(ctx, t, readAt, h.adaptedAnswer(t, st), usage, onlyChanges, seen)
}

// unusableAnswer is what a read whose answer gives a member the adaptor needs another type
// (adaptor.Malformed) does: the client's poll is 502 invalid_response naming the member, and the
// task is left as it is, read again later, until its execution_expires_after (the contract's
// default when not given) has passed; then it expires with the code invalid_response, once, as a
// task whose state no rule maps does: charged its estimate by whoever wins the change, as the
// provider may still make it and bill it. It is never retried to the longest execution time
// (overdue).
func (h *Handler) unusableAnswer(ctx context.Context, t storage.Task, r adaptor.Request, m *adaptor.Malformed) (storage.Task, error) {
	if h.now().After(executionDeadline(t, r)) {
		return h.settle(ctx, t, verdict{
			status:  StatusExpired,
			code:    upstream.ErrUnreadable.Code,
			message: "the provider's answers about the task were unusable until execution_expires_after: " + m.Error(),
			logged:  "task expired: its provider's answers stayed unusable past execution_expires_after",
			fields:  []zap.Field{zap.String("member", m.Member)},
			won:     func() (charge bool) { return true },
		})
	}
	h.Logger.Debug("provider's answer about a task is unusable; the task is unchanged",
		zap.String("task_id", t.ID), zap.String("member", m.Member), zap.String("got", m.Got))
	return t, unusable(m)
}

// unusable is the 502 invalid_response of a read whose answer is unusable (adaptor.Malformed),
// naming the member; the task is unchanged.
func unusable(m *adaptor.Malformed) error {
	return apierror.New(http.StatusBadGateway, upstream.ErrUnreadable.Code,
		"the video generation backend's answer about this task is unusable ("+m.Error()+"); the task is unchanged: try again later")
}

// storedAnswer is t with its client answer: the stored one, or one made of the record.
func storedAnswer(t storage.Task) storage.Task {
	if len(t.Result) == 0 {
		t.Result = recordJSON(t)
	}
	return t
}

// canonicalRequest is the create request that t's record keeps.
func canonicalRequest(t storage.Task) (adaptor.Request, error) {
	var r adaptor.Request
	if len(t.Request) == 0 {
		return r, nil
	}
	err := json.Unmarshal(t.Request, &r)
	return r, err
}

// executionDeadline is when a task made through an adaptor that has not finished expires: its
// creation plus execution_expires_after (executionSeconds).
func executionDeadline(t storage.Task, r adaptor.Request) time.Time {
	return time.Unix(t.CreatedAt, 0).Add(time.Duration(executionSeconds(r)) * time.Second)
}

// executionSeconds is the create's execution_expires_after, or the contract's default when it
// was not given.
func executionSeconds(r adaptor.Request) int64 {
	if r.ExecutionExpiresAfter <= 0 {
		return adaptor.DefaultExecutionExpiresAfter
	}
	return r.ExecutionExpiresAfter
}

// adaptedAnswer writes an adaptor's state as the upstream answer of an Ark task, which
// queryResult then makes the client's answer (spec §2.5): a state that no rule maps is running;
// a result that needs the operator's credential is the task's content endpoint
// (ContentURL); usage.completion_tokens carries a token count the provider reported.
func (h *Handler) adaptedAnswer(t storage.Task, st adaptor.State) map[string]json.RawMessage {
	status := st.Status
	if status == adaptor.StatusUnknown {
		status = StatusRunning
	}
	answer := map[string]json.RawMessage{"status": statusJSON[status]}
	if status != t.Status {
		answer["updated_at"] = mustJSON(h.now().Unix())
	}
	switch status {
	case StatusSucceeded:
		content := map[string]string{"video_url": st.VideoURL}
		if st.Credentialed {
			content["video_url"] = h.ContentURL(t.ID)
		}
		if st.LastFrameURL != "" {
			content["last_frame_url"] = st.LastFrameURL
		}
		answer["content"] = mustJSON(content)
	case StatusFailed:
		code := st.ErrorCode
		if code == "" {
			code = "upstream_task_failed"
		}
		message := st.ErrorMessage
		if message == "" {
			message = "the task failed at the provider (" + st.ProviderStatus + ")"
		}
		answer["error"] = mustJSON(map[string]string{"code": bounded.Text(code, MaxFailureCode), "message": bounded.Text(message, MaxFailureMessage)})
	}
	if answerDuration(st.Duration) {
		answer["duration"] = mustJSON(st.Duration)
	}
	if st.Resolution != "" {
		answer["resolution"] = mustJSON(st.Resolution)
	}
	if st.Ratio != "" {
		answer["ratio"] = mustJSON(st.Ratio)
	}
	if status == StatusSucceeded && st.Usage.VideoTokens > 0 {
		answer["usage"] = mustJSON(map[string]int64{"completion_tokens": st.Usage.VideoTokens, "total_tokens": st.Usage.VideoTokens})
	}
	return answer
}

// ContentURL is the owner-only content endpoint of a task: RelayBase (the gateway's public base
// URL, the callbacks block's relay_base) and the task API's path, or the path alone when
// RelayBase is not set.
func (h *Handler) ContentURL(taskID string) string {
	return strings.TrimSuffix(h.RelayBase, "/") + ownContentPath(taskID)
}
