package videotask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// owned returns the task record if it exists, belongs to the caller's account and is of a model
// the caller's key may use (auth.Identity.Sees). Another account's task, or one of a model the
// key may not use, is answered exactly like a missing one.
func (h *Handler) owned(ctx context.Context, id auth.Identity, taskID string) (storage.Task, error) {
	t, err := h.Store.Task(ctx, taskID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!id.Sees(t.Account, t.Model) || t.Kind != storage.KindVideo)) {
		return storage.Task{}, errTaskNotExist
	}
	usage.From(ctx).About(t.ID, t.Model, t.Provider)
	return t, err
}

// query answers GET …/tasks/{id}. Terminal results come from the store; an unfinished task is
// read from the upstream at most once per RefreshInterval, and concurrent polls share that read.
func (h *Handler) query(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	t, err := h.owned(r.Context(), id, taskID)
	if err != nil {
		return err
	}
	if t, err = h.current(t); err != nil {
		return err
	}
	writeRaw(w, h.clientAnswer(r.Context(), t))
	return nil
}

// current is the record of an owned task with a current answer: the stored one when fresh, else
// one read from the upstream (shared with concurrent reads).
func (h *Handler) current(t storage.Task) (storage.Task, error) {
	if fresh(t, h.refreshInterval(), h.now()) {
		return t, nil
	}
	return h.refreshOnce(context.Background(), t)
}

// fresh reports whether the stored result may be served without asking the upstream.
func fresh(t storage.Task, interval time.Duration, now time.Time) bool {
	if len(t.Result) == 0 {
		return false
	}
	return storage.Terminal(t.Status) || now.Sub(time.Unix(0, t.RefreshedAt)) < interval
}

// refresh reads a task from its upstream, stores the new state and returns the updated record,
// whose Result is the client's answer. A task whose upstream no longer knows it (404), or whose
// provider left the config, is finished: its slot is released and, if configured, its cost
// refunded, once. So is one that has run past the longest execution time (see overdue). The
// answer is written even when it changes nothing (a client's poll, see storeAnswer).
func (h *Handler) refresh(ctx context.Context, t storage.Task) (storage.Task, error) {
	return h.readUpstream(ctx, t, false, nil)
}

// readUpstream is refresh; with onlyChanges (t was read from the store just before, as the
// watcher's reads are) an answer that changes nothing is not written, and seen spares its
// comparison as storeAnswer says.
func (h *Handler) readUpstream(ctx context.Context, t storage.Task, onlyChanges bool, seen *answerMemo) (storage.Task, error) {
	if h.Watcher != nil && !onlyChanges {
		// A client's refresh: the watcher's next poll reads the record it changes. (The
		// watcher's own reads, onlyChanges, tell it the record they leave: refreshBatch.)
		h.Watcher.forgetHeld(t.ID)
	}
	if keepPending(t) {
		// Succeeded upstream; running here until its result is kept (keep.go), or given up
		// (without a Keeper, or past the longest execution time).
		if h.Keep == nil || h.overdue(t) {
			return h.keepAbandoned(ctx, t)
		}
		h.keepSoon(t)
		return storedAnswer(t), nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.upstreamTimeout())
	defer cancel()
	if h.overdue(t) {
		return h.expireOverdue(ctx, t)
	}
	p, ok := h.boundUpstream(t)
	if !ok {
		return h.orphaned(ctx, t)
	}
	if h.now().Before(p.PausedUntil()) || !h.mayRead(ctx, p) {
		// Paused after a 429, or at its max_rps: the stored answer, read again later.
		return storedAnswer(t), nil
	}
	if t.UpstreamID != "" {
		a, ok := h.taskAdaptor(t)
		if !ok {
			return h.orphaned(ctx, t) // its provider no longer speaks the task's protocol
		}
		return h.refreshAdapted(ctx, t, a, p, onlyChanges, seen)
	}
	readAt := h.now().UnixNano()
	ans, err := h.upstream().Call(ctx, p, http.MethodGet, TasksPath+"/"+url.PathEscape(t.ID), nil)
	if err != nil {
		return t, err
	}
	if h.throttledBy(p, ans) {
		// Paused for its Retry-After; the poll that met the 429 gets the stored answer, as an
		// adaptor's task does (refreshAdapted): the client's poll rate is not what was refused.
		return storedAnswer(t), nil
	}
	if ans.Status == http.StatusNotFound {
		if _, err := h.finishUnreachable(ctx, t, "its upstream answered 404"); err != nil {
			return t, err
		}
		return t, errTaskNotExist
	}
	if !ans.OK() {
		return t, readRefused(upstream.Refusal(ans))
	}
	var answer map[string]json.RawMessage
	if json.Unmarshal(withoutCredentials(p, ans.Body), &answer) != nil || answer == nil {
		return t, upstream.ErrUnreadable
	}
	return h.storeAnswer(ctx, t, readAt, answer, onlyChanges, seen)
}

// storeAnswer records an upstream's answer about a task, read at readAt (Unix nanoseconds), by
// compare-and-set, and performs what the change calls for (slot release, refund, callback) when
// this call made it. It returns the updated record, whose Result is the client's answer.
//
// seen, when not nil, remembers answers that the record already says, so that the same answer
// to the same record version is not compared again.
//
// With onlyChanges (t was read from the store just before the upstream call), an answer that
// changes neither the status nor the client's answer is not written, nor the record read
// again: the watcher's routine reads of thousands of unchanged tasks then cost no store work
// (its shard lease, not RefreshedAt, keeps other instances from reading the task again). A
// client's poll writes even then, so that the next polls within the refresh interval come from
// the store.
func (h *Handler) storeAnswer(ctx context.Context, t storage.Task, readAt int64, answer map[string]json.RawMessage, onlyChanges bool, seen *answerMemo) (storage.Task, error) {
	return h.storeAnswerUsage(ctx, t, readAt, answer, nil, onlyChanges, seen)
}

// storeAnswerUsage is storeAnswer that also stores usage (when not nil) as the record's Usage.
func (h *Handler) storeAnswerUsage(ctx context.Context, t storage.Task, readAt int64, answer map[string]json.RawMessage, usage json.RawMessage, onlyChanges bool, seen *answerMemo) (storage.Task, error) {
	c, err := h.newAnswerChange(t, readAt, answer, onlyChanges, seen)
	if err != nil || c == nil {
		return t, err
	}
	if usage != nil {
		c.usage = usage // the adaptor's report, over reportedUsage's
	}
	var stored storage.Task
	if onlyChanges {
		stored, err = storage.UpdateTaskFrom(ctx, h.Store, t, c.apply) // t was just read
	} else {
		stored, err = storage.UpdateTask(ctx, h.Store, t.ID, c.apply)
	}
	return h.answerStored(ctx, c, stored, err, seen)
}

// answerChange is the change that an upstream's answer makes to a task record: storeAnswer's
// parts, which a batch (refreshBatch) runs for many tasks with one store write.
type answerChange struct {
	h           *Handler
	t           storage.Task // the record the answer was compared with
	readAt      int64
	onlyChanges bool
	fp          uint64
	status      string
	body        json.RawMessage
	updatedAt   int64
	hasUpdated  bool
	// usage, when set, is stored as the record's Usage (an adaptor's report of a finished task).
	usage json.RawMessage
	// noResult is an answer of success without a result, which the memo never remembers.
	noResult bool
	// finished, notify and keeping are what the last run of apply decided; keeping is a
	// success recorded as a pending copy of its result (keep.go).
	finished, notify, keeping bool
}

// newAnswerChange builds the change an answer makes to t, or answers nil when, with
// onlyChanges, t already says what the answer says (nothing to store). Every value of answer
// must be valid JSON, as every caller's is: decoded from the upstream's answer, which was checked
// whole (json.Unmarshal, listItems), or written by json.Marshal (adaptedAnswer).
func (h *Handler) newAnswerChange(t storage.Task, readAt int64, answer map[string]json.RawMessage, onlyChanges bool, seen *answerMemo) (*answerChange, error) {
	// The change is built on the stack, and moved to the heap only once there is one: an
	// answer the memo knows (the watcher's usual read) allocates none.
	var c answerChange
	if ok, err := h.makeAnswerChange(&c, t, readAt, answer, onlyChanges, seen); !ok {
		return nil, err
	}
	change := new(answerChange)
	*change = c
	return change, nil
}

// makeAnswerChange is newAnswerChange building the change in c, for a caller that keeps the
// changes of a batch in one slice (refreshBatch); ok is false when there is none to store.
func (h *Handler) makeAnswerChange(c *answerChange, t storage.Task, readAt int64, answer map[string]json.RawMessage, onlyChanges bool, seen *answerMemo) (ok bool, err error) {
	var fp uint64
	if seen != nil {
		fp = fingerprint(answer)
		if onlyChanges && !t.Finished && seen.unchanged(t.ID, t.Version, fp) {
			return false, nil
		}
	}
	if onlyChanges && h.stillUnread(t, answer) {
		seen.note(t.ID, t.Version, fp)
		return false, nil
	}
	result, status := queryResult(answer, t)
	// A success without a result reads running until the task's time is up (resultMissing); the
	// memo must not spare the read that finds it up.
	noResult := status == StatusRunning && answerStatus(answer["status"]) == StatusSucceeded
	if noResult {
		result, status = h.resultMissing(result, t)
	}
	body, err := encodeAnswer(result, true) // answer's values are valid JSON, see above
	if err != nil {
		return false, err
	}
	if onlyChanges && !t.Finished && t.Status == status && bytes.Equal(t.Result, body) {
		// The record as read before the upstream call already says this: nothing to store, and
		// no store round trip to find that out.
		if !noResult {
			seen.note(t.ID, t.Version, fp)
		}
		return false, nil
	}
	*c = answerChange{h: h, t: t, readAt: readAt, onlyChanges: onlyChanges, fp: fp, status: status, body: body, noResult: noResult}
	c.updatedAt, c.hasUpdated = integer(result.get("updated_at"))
	if status == StatusSucceeded {
		c.usage = reportedUsage(answer, body)
	}
	return true, nil
}

// stillUnread reports whether a watcher's read finds queued a task that no read has answered
// yet (its record has no Result) and that its record shows queued, with no callback due: such
// an answer is not stored. The record's own answer (recordJSON: id, model, status queued, error
// null, content empty, its times) is what a client is shown of a queued task until a read
// finds it running or ended, or a client's own read stores the upstream's answer (GET reads
// an unanswered task from the upstream every time). A task's first read usually finds it
// queued, and storing that answer was a record write for every task created.
func (h *Handler) stillUnread(t storage.Task, answer map[string]json.RawMessage) bool {
	return len(t.Result) == 0 && !t.Finished && t.Status == StatusQueued &&
		answerStatus(answer["status"]) == StatusQueued && !h.callbackDue(t)
}

// callbackDue reports whether a change of t that gives it an answer sends a callback
// (markNotified).
func (h *Handler) callbackDue(t storage.Task) bool {
	return h.Callbacks != nil && t.CallbackURL != "" && !t.CallbackGone && t.Status != t.Notified
}

// apply is the compare-and-set's change function: it may run more than once, and its last run
// decides finished and notify.
func (c *answerChange) apply(cur *storage.Task) error {
	c.finished, c.notify, c.keeping = false, false, false
	// Never go back: a finished record, or one refreshed from a later read, stays; so does one
	// whose result is being kept, which only its copy changes (keep_copy.go).
	if cur.Finished || storage.Terminal(cur.Status) || cur.RefreshedAt > c.readAt || len(cur.Keep) > 0 {
		return storage.ErrNoChange
	}
	if cur.Status == StatusRunning && c.status == StatusQueued {
		// Recorded running since t was read: a task's status goes forward only (queryResult
		// holds a queued answer over a running record at running).
		return storage.ErrNoChange
	}
	if c.onlyChanges && cur.Status == c.status && bytes.Equal(cur.Result, c.body) {
		return storage.ErrNoChange
	}
	if c.hasUpdated {
		cur.UpdatedAt = c.updatedAt
	}
	cur.Status, cur.Result, cur.RefreshedAt = c.status, c.body, c.h.now().UnixNano()
	if c.usage != nil {
		cur.Usage = c.usage
	}
	if c.status == StatusSucceeded && c.h.holdForKeeping(cur, c.body) {
		c.keeping = true
		c.notify = c.h.markNotified(cur)
		return nil
	}
	c.notify = c.h.markNotified(cur)
	if storage.Terminal(c.status) {
		c.finished = c.h.markFinished(cur, c.notify)
	}
	return nil
}

// sideEffects reports whether the stored change calls for a slot release, a refund or a
// callback.
func (c *answerChange) sideEffects() bool { return c.finished || c.notify || c.keeping }

// answerStored completes storeAnswer once the change was stored (or failed with err): it
// performs the change's side effects, which this caller won, and returns the stored record.
func (h *Handler) answerStored(ctx context.Context, c *answerChange, stored storage.Task, err error, seen *answerMemo) (storage.Task, error) {
	t := c.t
	if errors.Is(err, storage.ErrNotFound) {
		return t, errTaskNotExist // deleted meanwhile (a cancel of a finished task)
	}
	if err != nil {
		h.Logger.Error("storing task status", zap.String("task_id", t.ID), zap.Error(err))
		return t, err
	}
	if c.finished {
		h.finishEffects(ctx, stored) // the callback with them
	} else if c.notify {
		h.notify(ctx, stored)
	}
	if c.keeping {
		h.keepSoon(stored)
	}
	if !c.noResult && stored.Unfinished() && stored.Status == c.status && bytes.Equal(stored.Result, c.body) {
		seen.note(stored.ID, stored.Version, c.fp)
	} else {
		seen.forget(stored.ID)
	}
	if len(stored.Result) == 0 {
		stored.Result = recordJSON(stored)
	}
	return stored, nil
}

// finishUnreachable finishes a task that can no longer be read from its upstream, once, and
// returns the stored record.
func (h *Handler) finishUnreachable(ctx context.Context, t storage.Task, why string) (storage.Task, error) {
	won := false
	stored, err := storage.UpdateTask(ctx, h.Store, t.ID, func(cur *storage.Task) error {
		if won = h.markFinished(cur, false); !won {
			return storage.ErrNoChange
		}
		if cur.Effects&storage.EffectHold != 0 && h.deleteUnderway(t.ID) {
			// Gone after a DELETE the provider accepted: it may have finished (see
			// cancel_deletes.go), and is charged its estimate (accounting.StatusDeleted).
			cur.Effects |= storage.EffectDeleted
		}
		if len(cur.Result) == 0 {
			cur.Result = recordJSON(*cur)
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return t, errTaskNotExist
	}
	if err != nil {
		h.Logger.Error("finishing a task", zap.String("task_id", t.ID), zap.Error(err))
		return t, err
	}
	if won {
		if stored.Effects&storage.EffectDeleted != 0 {
			why += " after a DELETE it accepted; it may have finished, and is charged its estimate"
		}
		h.Logger.Info("task finished: "+why, zap.String("task_id", t.ID), zap.String("last_status", stored.Status))
		h.finishEffects(ctx, stored)
	}
	if len(stored.Result) == 0 {
		stored.Result = recordJSON(stored)
	}
	return stored, nil
}

// list answers GET …/tasks from the store: only the caller's account's tasks of models its key
// may use, newest first.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, id auth.Identity) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apierror.New(http.StatusBadRequest, "invalid_request", "the query string is malformed: "+err.Error())
	}
	q, err := parseListQuery(v)
	if err != nil {
		return err
	}
	q.ModelAllowed = id.ModelFilter()
	page, err := h.Store.ListTasks(r.Context(), id.Account, q)
	if err != nil {
		return err
	}
	items := make([]json.RawMessage, 0, len(page.Tasks))
	for _, t := range page.Tasks {
		items = append(items, listItem(h.clientAnswer(r.Context(), t)))
	}
	writeJSON(w, map[string]any{"items": items, "total": page.Total})
	return nil
}

// listItem adds failure_reason, the list's name for a failed task's error, beside error.
func listItem(result json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || isNull(m["error"]) || m["error"] == nil {
		return result
	}
	m["failure_reason"] = m["error"]
	b, _ := apierror.Marshal(m)
	return b
}

// MaxFilterTaskIDs bounds the filter.task_ids of one list request.
const MaxFilterTaskIDs = 100

// parseListQuery reads the list parameters. Each but filter.task_ids may be given once.
func parseListQuery(v url.Values) (storage.TaskQuery, error) {
	q := storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 10}
	for _, name := range []string{"page_num", "page_size", "filter.status", "filter.model"} {
		if len(v[name]) > 1 {
			return q, invalid(name, "is given more than once")
		}
	}
	for _, p := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"page_num", &q.PageNum, 1, 1 << 30}, {"page_size", &q.PageSize, 1, 500}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < p.min || n > p.max {
			return q, invalid(p.name, "must be an integer between %d and %d", p.min, p.max)
		}
		*p.dst = n
	}
	q.Status, q.Model = v.Get("filter.status"), v.Get("filter.model")
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return q, invalid("filter.status", "must be one of queued, running, succeeded, failed, cancelled, expired")
	}
	q.IDs = v["filter.task_ids"]
	if len(q.IDs) > MaxFilterTaskIDs {
		return q, invalid("filter.task_ids", "may name at most %d task ids", MaxFilterTaskIDs)
	}
	return q, nil
}

// cancel answers DELETE …/tasks/{id}. The task is read from the upstream first: a task that has
// already finished is deleted upstream (and its record here) and never refunded as cancelled; a
// queued one is cancelled upstream, and recorded as cancelled (and refunded, if configured) only
// when a read after the cancel confirms it. A running task cannot be cancelled; the upstream's
// refusal is passed on.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	if err := h.cancelTask(r.Context(), id, taskID); err != nil {
		return err
	}
	writeJSON(w, struct{}{})
	return nil
}

// cancelTask is cancel without the answer: every front answers a cancel (or a delete) in its
// own protocol.
func (h *Handler) cancelTask(reqCtx context.Context, id auth.Identity, taskID string) error {
	t, err := h.owned(reqCtx, id, taskID)
	if err != nil {
		return err
	}
	if keepPending(t) {
		return errKeeping // running to its client, and nothing upstream left to cancel
	}
	p, ok := h.boundUpstream(t)
	if !ok {
		if _, err := h.orphaned(reqCtx, t); err != nil {
			return err
		}
		return apierror.New(http.StatusConflict, "provider_unavailable", "the upstream of this task is no longer configured")
	}
	ctx := context.WithoutCancel(reqCtx) // once the upstream is asked, record its answer
	if t.UpstreamID != "" {
		return h.cancelAdapted(ctx, t, p)
	}
	cur, err := h.refresh(ctx, t)
	switch {
	case errors.Is(err, errTaskNotExist):
		// Unknown upstream (finished above): forget it here too.
		return h.forget(ctx, taskID)
	case err != nil:
		return err
	}
	// A running task cannot be cancelled: a DELETE of one that the provider accepts met its end.
	// Until the confirming read below, a 404 of it charges its estimate (cancel_deletes.go).
	deleted := func() {}
	if cur.Status == StatusRunning {
		deleted = h.deleting(t.ID)
	}
	defer deleted()
	ans, err := h.upstream().Call(ctx, p, http.MethodDelete, TasksPath+"/"+url.PathEscape(t.ID), nil)
	if err != nil {
		return err
	}
	if !ans.OK() {
		deleted() // refused, or unknown already: a 404 now is no task this DELETE ended
	}
	if !ans.OK() && ans.Status != http.StatusNotFound {
		return withoutRelayTokensIn(upstream.Refusal(ans))
	}
	if storage.Terminal(cur.Status) || ans.Status == http.StatusNotFound {
		// A finished task: the upstream deleted its record, so this one goes too.
		return h.forget(ctx, taskID)
	}
	// Confirm: only the upstream's own status after the cancel is recorded (and refunded).
	if _, err := h.refresh(ctx, cur); err != nil && !errors.Is(err, errTaskNotExist) {
		return err
	}
	return nil
}

// forget deletes a task record by compare-and-set, re-reading it after a concurrent change.
func (h *Handler) forget(ctx context.Context, taskID string) error {
	for range 8 {
		t, err := h.Store.Task(ctx, taskID)
		if errors.Is(err, storage.ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		if t.Unfinished() {
			// Deleted upstream while unfinished: finish it (release, refund) before forgetting.
			if _, err := h.finishUnreachable(ctx, t, "it was deleted upstream"); err != nil && !errors.Is(err, errTaskNotExist) {
				return err
			}
			continue
		}
		if t.Effects != 0 {
			// Its finish's effects are not done yet (its winner is at them, or died): a deleted
			// record would leave them to no one, so they are done first (once: finishEffects).
			if !h.finishEffects(ctx, t) {
				return fmt.Errorf("task %s: its finish's effects are still pending", taskID)
			}
			continue
		}
		if h.Watcher != nil {
			h.Watcher.forgetHeld(taskID) // a later task under this id must not meet this record
		}
		if err = h.Store.DeleteTask(ctx, taskID, t.Version); !errors.Is(err, storage.ErrConflict) {
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// abandon cancels an upstream task whose ownership could not be recorded, so that nobody pays
// for a task no client can see, and reports whether the upstream confirmed the cancellation.
func (h *Handler) abandon(p *providers.Upstream, taskID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.upstreamTimeout())
	defer cancel()
	ans, err := h.upstream().Call(ctx, p, http.MethodDelete, TasksPath+"/"+url.PathEscape(taskID), nil)
	h.Logger.Warn("task created upstream but its ownership could not be recorded; cancelling it upstream",
		zap.String("task_id", taskID), zap.Int("upstream_status", ans.Status), zap.Error(err))
	return err == nil && ans.OK()
}

func (h *Handler) upstreamTimeout() time.Duration {
	if h.Client.Timeout > 0 {
		return h.Client.Timeout
	}
	return DefaultUpstreamTimeout
}

// markNotified is the part of a record update that decides whether a callback is due: the task
// has a callback URL that was not stopped and its status changed since the last one. It sets
// Notified and reports true; the caller whose update is stored then calls notify.
func (h *Handler) markNotified(t *storage.Task) bool {
	if !h.callbackDue(*t) || len(t.Result) == 0 {
		return false
	}
	t.Notified = t.Status
	return true
}

// notify queues the callback of a stored change. The body is the query answer, exactly as the
// query endpoint returns it. If it cannot be queued, Notified is cleared again so that the next
// refresh retries.
func (h *Handler) notify(ctx context.Context, t storage.Task) {
	err := h.Callbacks.Enqueue(ctx, h.callbackEvent(ctx, t))
	if err == nil {
		return
	}
	h.Logger.Error("queueing a callback", zap.String("task_id", t.ID), zap.Error(err))
	_, err = storage.UpdateTask(context.WithoutCancel(ctx), h.Store, t.ID, func(cur *storage.Task) error {
		if cur.Notified != t.Status || storage.Terminal(cur.Status) {
			return storage.ErrNoChange
		}
		cur.Notified = ""
		return nil
	})
	if err != nil {
		h.Logger.Error("clearing a callback that could not be queued", zap.String("task_id", t.ID), zap.Error(err))
	}
}

// CallbackGone stops callbacks for a task whose receiver answered 410 Gone. The change is a
// compare-and-set, so a refresh that runs at the same time cannot bring the callback back.
func (h *Handler) CallbackGone(ctx context.Context, taskID string) {
	_, err := storage.UpdateTask(ctx, h.Store, taskID, func(t *storage.Task) error {
		if t.CallbackGone {
			return storage.ErrNoChange
		}
		t.CallbackURL, t.CallbackGone = "", true
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		h.Logger.Error("stopping callbacks", zap.String("task_id", taskID), zap.Error(err))
	}
}

// CallbacksStopped reports whether a task's receiver answered 410 Gone: its pending events are
// dropped.
func (h *Handler) CallbacksStopped(ctx context.Context, taskID string) bool {
	t, err := h.Store.Task(ctx, taskID)
	return err == nil && t.CallbackGone
}

// now reads the handler's clock.
func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) refreshInterval() time.Duration {
	if h.RefreshInterval > 0 {
		return h.RefreshInterval
	}
	return DefaultRefreshInterval
}

func recordJSON(t storage.Task) json.RawMessage { return mustJSON(recordResult(t)) }

func writeRaw(w http.ResponseWriter, body json.RawMessage) {
	apierror.OwnJSON(w.Header())
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}
