package videotask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// MaxRefreshBatch is the most tasks one list call refreshes (Ark's page_size allows 500; a
// smaller batch keeps each answer small and each call quick).
const MaxRefreshBatch = 100

// batchRetryAfter is how long the tasks of an upstream whose task list proved it cannot filter by
// id are read one at a time before its list is tried again (the provider may have added the
// filter since).
const batchRetryAfter = 10 * time.Minute

// unbatched remembers, for one Handler, the upstreams whose task list proved it cannot filter by
// id, and until when their tasks are read one at a time. A reload builds a new Handler with new
// upstreams, so it starts empty; an entry is dropped once it lapses. The zero value is ready.
type unbatched struct {
	mu    sync.Mutex
	until map[*providers.Upstream]time.Time
}

// allows reports whether p's tasks may be read through its task list at t.
func (b *unbatched) allows(p *providers.Upstream, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, refused := b.until[p]
	if refused && !t.Before(until) {
		delete(b.until, p)
		return true
	}
	return !refused
}

// refuse reads p's tasks one at a time from t for batchRetryAfter.
func (b *unbatched) refuse(p *providers.Upstream, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = map[*providers.Upstream]time.Time{}
	}
	b.until[p] = t.Add(batchRetryAfter)
}

// seenRecord is the record of a task that a batch left unfinished, as the store has it as far as
// the batch knows: the record it started from, which the listed answer did not change (fresh
// false), or the one its compare-and-set stored or read (fresh).
type seenRecord struct {
	t     storage.Task
	fresh bool
}

// refreshBatch reads several tasks of one upstream (the one that created them) in one call,
// through the task list with filter.task_ids (as Ark's list accepts), and stores each answer as
// refresh does, the changed records in one store write (storage.UpdateTasksFrom). A task missing
// from the list answer, and every task of an upstream whose list refuses the filter, is read on
// its own. seen (may be nil) spares the comparison of answers that the records already say. It
// returns the upstream requests made and the ids of the tasks that may still change (unfinished,
// or not read for a passing reason), and tells keep (when not nil; one call at a time) the record
// of each task left unfinished and not being kept (keep.go), for the watcher's next poll of it
// (Watcher.hold).
func (h *Handler) refreshBatch(ctx context.Context, p *providers.Upstream, tasks []storage.Task, seen *answerMemo, keep func(seenRecord)) (upstreamCalls int, open []string) {
	var keepMu sync.Mutex
	tell := func(r seenRecord) {
		if keep != nil {
			keepMu.Lock()
			defer keepMu.Unlock()
			keep(r)
		}
	}
	one := func(t storage.Task) {
		upstreamCalls++
		stored, err := h.refreshLogged(ctx, t, seen)
		if err == nil && !stored.Unfinished() || errors.Is(err, errTaskNotExist) {
			return
		}
		open = append(open, t.ID)
		// The record stored or read, or t itself unchanged (not t with a Result filled in for
		// the caller, which the store does not have).
		if err == nil && !keepPending(stored) &&
			(stored.Version != t.Version || bytes.Equal(stored.Result, t.Result)) {
			tell(seenRecord{t: stored, fresh: stored.Version != t.Version})
		}
	}
	if len(tasks) == 1 || tasks[0].UpstreamID != "" || !h.unbatched.allows(p, h.now()) {
		// An adaptor's tasks (UpstreamID set; an upstream's tasks share its protocol) are read
		// one by one; while a 429 pauses the upstream, readUpstream reads nothing.
		for _, t := range tasks {
			one(t)
		}
		return upstreamCalls, open
	}
	answers, err := h.listByIDs(ctx, p, tasks)
	upstreamCalls = 1
	if err != nil {
		if !errors.Is(err, errNoIDFilter) && !errors.Is(err, errThrottled) && ctx.Err() == nil {
			h.Logger.Warn("batched task refresh failed; reading the tasks one by one",
				zap.String("upstream", p.Label()), zap.Int("tasks", len(tasks)), zap.Error(err))
		}
		for _, t := range tasks {
			// One by one within the upstream's pace (each read takes its share: see
			// mayRead), none while a 429 pauses it.
			if errors.Is(err, errThrottled) {
				open = append(open, t.ID)
				continue
			}
			one(t)
		}
		return upstreamCalls, open
	}
	// The changed records are written together (one store write, one disk sync; none waited for
	// when no change sets anything off); then the side effects that those changes won (slot
	// releases, refunds, callbacks) run, concurrently.
	var unlisted, curs []storage.Task
	var changes []answerChange // never grown: the side effects below keep pointers into it
	for _, t := range tasks {
		answer := answers[t.ID] // every task asked for has its slot; nil only if that changes
		if answer == nil || !answer.listed {
			unlisted = append(unlisted, t)
			continue
		}
		var c answerChange
		changed, err := h.makeAnswerChange(&c, t, answer.readAt, answer.fields, true, seen)
		if err != nil {
			h.Logger.Debug("storing a batched refresh", zap.String("task_id", t.ID), zap.Error(err))
		}
		if !changed {
			if err != nil || t.Unfinished() {
				open = append(open, t.ID)
			}
			if err == nil && t.Unfinished() && !keepPending(t) {
				tell(seenRecord{t: t})
			}
			continue
		}
		if curs == nil {
			// Room for every task: a Task is some 400 bytes, and a slice grown from empty would
			// copy a batch of them seven times over; the changes, one allocation for the batch.
			curs, changes = make([]storage.Task, 0, len(tasks)), make([]answerChange, 0, len(tasks))
		}
		curs, changes = append(curs, t), append(changes, c)
	}
	var mu sync.Mutex
	done := func(c *answerChange, stored storage.Task, err error) {
		record := stored // as stored: answerStored fills an empty Result in for the caller
		stored, err = h.answerStored(ctx, c, stored, err, seen)
		if errors.Is(err, errTaskNotExist) || err == nil && !stored.Unfinished() {
			return
		}
		if err != nil && ctx.Err() == nil {
			h.Logger.Debug("storing a batched refresh", zap.String("task_id", c.t.ID), zap.Error(err))
		}
		mu.Lock()
		defer mu.Unlock()
		open = append(open, c.t.ID)
		if err == nil && !keepPending(record) {
			// A version other than the one the change started from was stored or read.
			tell(seenRecord{t: record, fresh: record.Version != c.t.Version})
		}
	}
	if len(curs) > 0 {
		// A batch of changes that set nothing off (the first reads of new tasks, which store the
		// upstream's answers) is written lazily: lost in a machine crash, the next reads make
		// them again. One with a change that does is durable before its side effects run.
		stored, errs := storage.UpdateTasksFromLazily(ctx, h.Store, curs,
			func(i int, cur *storage.Task) error { return changes[i].apply(cur) },
			func(i int) bool { return !changes[i].sideEffects() && !storage.Terminal(changes[i].status) })
		var effects []int
		for i := range changes {
			if errs[i] == nil && changes[i].sideEffects() {
				effects = append(effects, i)
				continue
			}
			done(&changes[i], stored[i], errs[i])
		}
		forEach(len(effects), func(j int) {
			i := effects[j]
			done(&changes[i], stored[i], errs[i])
		})
	}
	// Not listed: read each alone, which also finishes a task the upstream forgot (404).
	for _, t := range unlisted {
		one(t)
	}
	return upstreamCalls, open
}

// refreshLogged is the watcher's read of one task (once across concurrent callers): t was read
// from the store just before, so an answer that changes nothing is not written, as in a batch
// (seen, may be nil, spares its comparison). A failure is logged.
func (h *Handler) refreshLogged(ctx context.Context, t storage.Task, seen *answerMemo) (storage.Task, error) {
	stored, err := h.readOnce(ctx, t, true, seen)
	if err != nil && ctx.Err() == nil && !errors.Is(err, errTaskNotExist) {
		h.Logger.Debug("refreshing a task", zap.String("task_id", t.ID), zap.Error(err))
	}
	return stored, err
}

// idString decodes a listed task's id as json.Unmarshal into a string does (null is ""); ok is
// false for a missing id or one that is not a string.
func idString(raw json.RawMessage) (string, bool) {
	if inner, ok := plainString(raw); ok {
		return string(inner), true
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return "", false
	}
	return id, true
}

// idBytes is idString as bytes: the usual id (a plain string, see plainKey) is a slice of raw,
// not a copy, for a map lookup that copies nothing.
func idBytes(raw json.RawMessage) ([]byte, bool) {
	if inner, ok := plainString(raw); ok {
		return inner, true
	}
	id, ok := idString(raw)
	return []byte(id), ok
}

// plainString is the inside of raw when raw is a JSON string whose characters need no decoding
// (see plainKey): what it decodes to, without a copy.
func plainString(raw json.RawMessage) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	if inner := raw[1 : len(raw)-1]; plainKey(inner) {
		return inner, true
	}
	return nil, false
}

// errNoIDFilter: the provider's task list does not take filter.task_ids.
var errNoIDFilter = errors.New("the task list does not filter by id")

// errThrottled: the provider's task list answered 429; the upstream is paused (throttledBy).
var errThrottled = errors.New("the task list answered 429")

// listQuery is the task list's path and query asking for tasks by id, one page of them all:
// what url.Values encodes (its names sorted, the ids in order), written in one buffer.
func listQuery(tasks []storage.Task) string {
	const id, page = "filter.task_ids=", "page_num=1&page_size="
	size := len(TasksPath) + 1 + len(page) + 3
	for _, t := range tasks {
		size += len(id) + len(t.ID) + 1
	}
	var b strings.Builder
	b.Grow(size) // more only when an id needs escapes
	b.WriteString(TasksPath)
	b.WriteByte('?')
	for _, t := range tasks {
		b.WriteString(id)
		b.WriteString(url.QueryEscape(t.ID))
		b.WriteByte('&')
	}
	b.WriteString(page)
	b.WriteString(strconv.Itoa(len(tasks)))
	return b.String()
}

// listedAnswer is one task of a list answer and when it was read; listed is false for a task
// asked for that the answer does not list.
type listedAnswer struct {
	fields map[string]json.RawMessage
	readAt int64
	listed bool
}

// listByIDs asks the provider's task list for the given tasks and returns the answer of each by
// id (one per id, also for an id asked twice; listed false for one the list left out). A list
// that proves it cannot filter by id (405: the upstream has no list read; or it lists a task that
// was not asked for: it ignored the filter) has that upstream's tasks read one at a time for
// batchRetryAfter; the other upstreams keep their batches. Any other answer (a 404, which a proxy
// or a moment's outage may give as well; a 400 of one odd id; a 429 or a 5xx) fails this batch
// only, and the next batch asks the list again.
func (h *Handler) listByIDs(ctx context.Context, p *providers.Upstream, tasks []storage.Task) (map[string]*listedAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, h.upstreamTimeout())
	defer cancel()
	// One map of the ids asked for, to slots filled in place: a listed id is looked up by its
	// bytes in the answer, with no string made of it.
	slots := make([]listedAnswer, len(tasks))
	answers := make(map[string]*listedAnswer, len(tasks))
	for i, t := range tasks {
		if _, asked := answers[t.ID]; !asked {
			answers[t.ID] = &slots[i]
		}
	}
	readAt := h.now().UnixNano()
	ans, err := h.upstream().Call(ctx, p, http.MethodGet, listQuery(tasks), nil)
	if err != nil {
		return nil, err
	}
	if ans.Status == http.StatusMethodNotAllowed {
		h.unbatched.refuse(p, h.now())
		h.Logger.Info("the provider's task list does not filter by id; its tasks are read one by one for a while",
			zap.String("upstream", p.Label()), zap.Int("status", ans.Status), zap.Duration("retry_after", batchRetryAfter))
		return nil, errNoIDFilter
	}
	if h.throttledBy(p, ans) {
		return nil, errThrottled
	}
	if !ans.OK() {
		return nil, upstream.Refusal(ans)
	}
	items, ok := listItems(withoutCredentials(p, ans.Body))
	if !ok {
		return nil, upstream.ErrUnreadable
	}
	for _, item := range items {
		id, ok := idBytes(item["id"])
		if !ok {
			return nil, upstream.ErrUnreadable
		}
		slot := answers[string(id)]
		if slot == nil {
			h.unbatched.refuse(p, h.now())
			h.Logger.Info("the provider's task list ignored the id filter; its tasks are read one by one for a while",
				zap.String("upstream", p.Label()), zap.Duration("retry_after", batchRetryAfter))
			return nil, errNoIDFilter
		}
		*slot = listedAnswer{fields: item, readAt: readAt, listed: true}
	}
	return answers, nil
}
