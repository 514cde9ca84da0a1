package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// owned returns the task record if it exists and belongs to the caller's account. Another
// account's task is answered exactly like a missing one.
func (h *Handler) owned(ctx context.Context, id auth.Identity, taskID string) (storage.Task, error) {
	t, err := h.Store.Task(ctx, taskID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (t.Account != id.Account || t.Kind != storage.KindVideo)) {
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
	if fresh(t, h.refreshInterval()) {
		writeRaw(w, t.Result)
		return nil
	}
	t, err = h.refreshOnce(context.Background(), t)
	if err != nil {
		return err
	}
	writeRaw(w, t.Result)
	return nil
}

// fresh reports whether the stored result may be served without asking the upstream.
func fresh(t storage.Task, interval time.Duration) bool {
	if len(t.Result) == 0 {
		return false
	}
	return storage.Terminal(t.Status) || now().Sub(time.Unix(0, t.RefreshedAt)) < interval
}

// refresh reads a task from its upstream, stores the new state and returns the updated record,
// whose Result is the client's answer.
func (h *Handler) refresh(ctx context.Context, t storage.Task) (storage.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, h.upstreamTimeout())
	defer cancel()
	p, ok := h.Catalog.ProviderFor(t.Model)
	if !ok || p.Name != t.Provider {
		if len(t.Result) == 0 {
			t.Result = recordJSON(t)
		}
		return t, nil // the provider is gone from the config: serve what is known
	}
	ans, err := h.upstream().Call(ctx, p, http.MethodGet, TasksPath+"/"+url.PathEscape(t.ID), nil)
	if err != nil {
		return t, err
	}
	if ans.Status == http.StatusNotFound {
		return t, errTaskNotExist
	}
	if !ans.OK() {
		return t, upstream.Refusal(ans)
	}
	var answer map[string]json.RawMessage
	if json.Unmarshal(ans.Body, &answer) != nil || answer == nil {
		return t, upstream.ErrUnreadable
	}
	result, status := queryResult(answer, t)
	body, err := json.Marshal(result)
	if err != nil {
		return t, err
	}
	if updated, ok := integer(result["updated_at"]); ok {
		t.UpdatedAt = updated
	}
	t.Status, t.Result, t.RefreshedAt = status, body, now().UnixNano()
	if storage.Terminal(status) {
		h.finished(ctx, &t, status)
	}
	h.notify(ctx, &t)
	if err := h.Store.PutTask(ctx, t); err != nil {
		h.Logger.Error("storing task status", zap.String("task_id", t.ID), zap.Error(err))
	}
	return t, nil
}

// list answers GET …/tasks from the store: only the caller's account, newest first.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, id auth.Identity) error {
	q, err := parseListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := h.Store.ListTasks(r.Context(), id.Account, q)
	if err != nil {
		return err
	}
	items := make([]json.RawMessage, 0, len(page.Tasks))
	for _, t := range page.Tasks {
		item := t.Result
		if len(item) == 0 {
			item = recordJSON(t)
		}
		items = append(items, listItem(item))
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
	b, _ := json.Marshal(m)
	return b
}

func parseListQuery(v url.Values) (storage.TaskQuery, error) {
	q := storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 10}
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
	return q, nil
}

// cancel answers DELETE …/tasks/{id}: the upstream cancels a queued task (which then reads as
// cancelled) or deletes a finished one (whose record is then removed here too). A running task
// cannot be cancelled; the upstream's refusal is passed on.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	t, err := h.owned(r.Context(), id, taskID)
	if err != nil {
		return err
	}
	p, ok := h.Catalog.ProviderFor(t.Model)
	if !ok || p.Name != t.Provider {
		return apierror.New(http.StatusConflict, "provider_unavailable", "the provider of this task is no longer configured")
	}
	ans, err := h.upstream().Call(r.Context(), p, http.MethodDelete, TasksPath+"/"+url.PathEscape(t.ID), nil)
	if err != nil {
		return err
	}
	if !ans.OK() && ans.Status != http.StatusNotFound {
		return upstream.Refusal(ans)
	}
	if ans.Status == http.StatusNotFound || storage.Terminal(t.Status) {
		h.finished(r.Context(), &t, t.Status)
		err = h.Store.DeleteTask(r.Context(), t.ID)
	} else {
		h.finished(r.Context(), &t, StatusCancelled)
		t.Status, t.UpdatedAt, t.RefreshedAt = StatusCancelled, now().Unix(), now().UnixNano()
		result := recordResult(t)
		if old := t.Result; len(old) > 0 {
			_ = json.Unmarshal(old, &result)
			result["status"], result["updated_at"] = mustJSON(StatusCancelled), mustJSON(t.UpdatedAt)
		}
		t.Result = mustJSON(result)
		h.notify(r.Context(), &t)
		err = h.Store.PutTask(r.Context(), t)
	}
	if err != nil {
		return err
	}
	writeJSON(w, struct{}{})
	return nil
}

// abandon cancels an upstream task whose ownership could not be recorded, so that nobody pays
// for a task no client can see.
func (h *Handler) abandon(p *providers.Provider, taskID string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.upstreamTimeout())
	defer cancel()
	ans, err := h.upstream().Call(ctx, p, http.MethodDelete, TasksPath+"/"+url.PathEscape(taskID), nil)
	h.Logger.Warn("task created upstream but its ownership could not be recorded; cancelling it upstream",
		zap.String("task_id", taskID), zap.Int("upstream_status", ans.Status), zap.Error(err))
}

func (h *Handler) upstreamTimeout() time.Duration {
	if h.Client.Timeout > 0 {
		return h.Client.Timeout
	}
	return DefaultUpstreamTimeout
}

// notify queues a callback when the task has a callback URL and its status changed since the
// last one. The body is the query answer, exactly as the query endpoint returns it.
func (h *Handler) notify(ctx context.Context, t *storage.Task) {
	if h.Callbacks == nil || t.CallbackURL == "" || t.Status == t.Notified || len(t.Result) == 0 {
		return
	}
	ev := callbacks.Event{ID: callbacks.EventID(t.ID, t.Status), TaskID: t.ID, Account: t.Account, URL: t.CallbackURL, Body: t.Result}
	if err := h.Callbacks.Enqueue(ctx, ev); err != nil {
		h.Logger.Error("queueing a callback", zap.String("task_id", t.ID), zap.Error(err))
		return
	}
	t.Notified = t.Status
}

// CallbackGone stops callbacks for a task whose receiver answered 410 Gone.
func (h *Handler) CallbackGone(ctx context.Context, taskID string) {
	t, err := h.Store.Task(ctx, taskID)
	if err != nil {
		return
	}
	t.CallbackURL = ""
	if err := h.Store.PutTask(ctx, t); err != nil {
		h.Logger.Error("stopping callbacks", zap.String("task_id", taskID), zap.Error(err))
	}
}

// finished releases what an unfinished task held (its active slot; its cost when unsuccessful
// tasks are refunded). The caller stores the record.
func (h *Handler) finished(ctx context.Context, t *storage.Task, status string) {
	if h.Accounting != nil {
		h.Accounting.TaskFinished(ctx, t, status)
	}
}

func (h *Handler) refreshInterval() time.Duration {
	if h.RefreshInterval > 0 {
		return h.RefreshInterval
	}
	return DefaultRefreshInterval
}

func recordJSON(t storage.Task) json.RawMessage { return mustJSON(recordResult(t)) }

func writeRaw(w http.ResponseWriter, body json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}
