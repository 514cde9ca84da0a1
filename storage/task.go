package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DefaultTaskRetention is how long task records are kept when nothing else is configured: the
// seven days for which the upstream keeps a task.
const DefaultTaskRetention = 7 * 24 * time.Hour

// MaxTaskRun bounds how long an upstream task runs unfinished: the largest
// execution_expires_after of the task API (72 hours), after which the upstream expires it. An
// unfinished task's record is kept this long past its creation, plus the retention (see
// Task.Expiry).
const MaxTaskRun = 259200 * time.Second

// Task kinds: the task families whose ownership mediagw records.
const (
	KindVideo = "video"
	KindImage = "image"
)

// Tasks holds the ownership records of upstream tasks (and of other upstream objects created
// through the gateway, under their own Kind). A record is created once and then changed only by
// compare-and-set on its Version: use UpdateTask, which applies a function to the current record
// and retries on conflict.
type Tasks interface {
	// CreateTask stores a new record with Version 1, or answers ErrExists when a record with
	// that id is already stored. The record expires at ExpiresAt (see Task.ExpiresAt). A
	// backend may bind the task's open hold (HoldID) to it in the same write, as BindHold
	// does (Badger does); the caller still calls BindHold, which then changes nothing.
	CreateTask(ctx context.Context, task Task) (Task, error)
	// Task returns the record of a task id, or ErrNotFound.
	Task(ctx context.Context, id string) (Task, error)
	// ReplaceTask stores task if the stored record's Version equals task.Version, and returns
	// it with its new Version. It answers ErrNotFound for a missing record and ErrConflict for
	// another version. Account, Kind and CreatedAt of a record never change.
	ReplaceTask(ctx context.Context, task Task) (Task, error)
	// ReplaceTasks is ReplaceTask for several records at once: it answers, in the order of
	// tasks, each stored record or the error of its own compare-and-set (ErrConflict,
	// ErrNotFound), which leaves the others to be stored. Every record stored is durable when it
	// returns. A backend writes them in as few round trips and disk syncs as it can; a failure of
	// the whole write is every task's error.
	ReplaceTasks(ctx context.Context, tasks []Task) ([]Task, []error)
	// DeleteTask removes a record if its stored Version equals version, or answers ErrConflict.
	// Deleting a missing record is not an error.
	DeleteTask(ctx context.Context, id string, version int64) error
	// ListTasks returns one account's tasks, newest first, filtered and paginated. It reads
	// every task of the account from the cursor on (for the total), unless q.NoTotal: then it
	// stops at the page's last task.
	ListTasks(ctx context.Context, account string, q TaskQuery) (TaskPage, error)
	// SearchTasks returns a page of one account's tasks, newest first, from a cursor, reading
	// at most q.Scan records (see TaskSearch).
	SearchTasks(ctx context.Context, account string, q TaskSearch) (TaskSearchPage, error)
	// SearchAllTasks is SearchTasks across every account, for an operator: it reads an index of
	// all tasks by creation time, with the same cursor, filters and bound. It never serves a
	// client or a member, whose searches name their account.
	SearchAllTasks(ctx context.Context, q TaskSearch) (TaskSearchPage, error)
	// TaskOfIdempotencyKey returns the record of the video task whose create carried the
	// idempotency key key (Task.IdempotencyKey), or ErrNotFound. CreateTask indexes a video
	// task's key in the write of its record, so a create that wrote its record is found.
	TaskOfIdempotencyKey(ctx context.Context, key string) (Task, error)
	// UnfinishedTasks calls fn with the id of every unfinished task (see Task.Unfinished), until
	// fn returns false. It reads an index, not every record.
	UnfinishedTasks(ctx context.Context, fn func(id string) bool) error

	// SetRelayToken records that the relay token whose SHA-256 is tokenHash belongs to taskID,
	// for ttl.
	SetRelayToken(ctx context.Context, tokenHash, taskID string, ttl time.Duration) error
	// RelayTask returns the task id of a relay token's hash, or ErrNotFound.
	RelayTask(ctx context.Context, tokenHash string) (string, error)
}

// ErrNoChange, returned by an UpdateTask function, leaves the record as it is; UpdateTask then
// returns the current record and no error.
var ErrNoChange = errors.New("no change")

// maxUpdateAttempts bounds UpdateTask's retries; only a record rewritten this many times while
// one update runs makes it give up.
const maxUpdateAttempts = 64

// UpdateTask applies change to the current record of task id and stores the result by
// compare-and-set, re-reading and re-applying change after each conflict. change may therefore
// run more than once: it must only modify the record and note what it decided; the decision of
// its last run is the one stored. The caller that wins a change (for example, the one whose
// change set Finished) is the one that performs its side effect, after UpdateTask returned
// without error.
//
// change returns ErrNoChange to leave the record alone, or another error to stop (returned
// as is). UpdateTask answers ErrNotFound for a missing record.
func UpdateTask(ctx context.Context, s Tasks, id string, change func(*Task) error) (Task, error) {
	for range maxUpdateAttempts {
		cur, err := s.Task(ctx, id)
		if err != nil {
			return cur, err
		}
		stored, err := replaceFrom(ctx, s, cur, change)
		if !errors.Is(err, ErrConflict) {
			return stored, err
		}
		if ctx.Err() != nil {
			return cur, ctx.Err()
		}
	}
	return Task{}, fmt.Errorf("updating task %s: %w %d times", id, ErrConflict, maxUpdateAttempts)
}

// replaceFrom applies change to a copy of cur and stores the result by compare-and-set on cur's
// Version. It answers cur when change returns ErrNoChange, and ErrConflict when cur is stale.
func replaceFrom(ctx context.Context, s Tasks, cur Task, change func(*Task) error) (Task, error) {
	next := cur
	next.Result = slices.Clone(cur.Result)
	if err := change(&next); errors.Is(err, ErrNoChange) {
		return cur, nil
	} else if err != nil {
		return cur, err
	}
	return s.ReplaceTask(ctx, next)
}

// Task is the ownership record of an upstream task: who created it, where it runs, and the last
// status mediagw saw.
type Task struct {
	// ID is the task id the upstream returned and the client uses.
	ID string `json:"id"`
	// Kind is KindVideo or KindImage.
	Kind     string `json:"kind"`
	Account  string `json:"account"`
	KeyID    string `json:"key_id"`
	Provider string `json:"provider"`
	// Upstream is the name of the provider's upstream (account) that created the task; every
	// later call about the task goes there. Empty in records written before upstreams had
	// names, meaning the provider's first upstream.
	Upstream string `json:"upstream,omitempty"`
	// UpstreamAddress is that upstream's base URL when the task was created, in the normal form
	// of providers.Upstream.Address. An upstream name later configured with another base URL is
	// another upstream: the task is no longer followed there. Empty in records written before
	// it was kept, which are bound by name alone.
	UpstreamAddress string `json:"upstream_address,omitempty"`
	// UpstreamID is the provider's own id of the task when it is not ID: a task of an upstream
	// that does not speak the Ark protocol gets an id of the gateway's, and its adaptor reads it
	// upstream by this one (a Gemini operation name, a DashScope task id). Empty for Ark tasks.
	UpstreamID string `json:"upstream_id,omitempty"`
	Model      string `json:"model"`
	// CreatedAt and UpdatedAt are Unix seconds.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
	// Status is the last known status (queued, running, succeeded, failed, cancelled, expired).
	Status string `json:"status"`
	// Result is the last query answer as the client sees it, kept for terminal tasks so they are
	// served without calling the upstream again.
	Result json.RawMessage `json:"result,omitempty"`
	// RefreshedAt is when the status was last read from the upstream (Unix nanoseconds).
	RefreshedAt int64 `json:"refreshed_at,omitempty"`
	// ExpiresAt is CreatedAt plus the record's retention (Unix seconds); zero means
	// DefaultTaskRetention. The retention counts from the task's finish: see Expiry. Writes never
	// set less than a minute.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// FinishedAt is when the record was first stored finished (not Unfinished), in Unix seconds.
	// The store sets it; the retention counts from it.
	FinishedAt int64 `json:"finished_at,omitempty"`
	// Active is true when the task holds one of its key's active-task slots, which it gives back
	// when it finishes (then Finished is set).
	Active bool `json:"active,omitempty"`
	// Finished is set by the one update that saw the task finish; whoever stored it releases
	// the slot and refunds, once.
	Finished bool `json:"finished,omitempty"`
	// Cost is the cost metered for the task; Held is the part taken from a limited quota.
	Cost int64 `json:"cost,omitempty"`
	Held int64 `json:"held,omitempty"`
	// HoldID is the ledger hold that pays for the task (see Ledger), bound to it: the one
	// update that sets Finished settles or releases it. HoldAmount is the estimate held, in
	// micro-units; HoldUsage is the usage the estimate assumed, as billing encodes it, whose
	// values stand in for what the upstream does not report when the hold is settled. The
	// record of a video that pass-through created, and of an image task, carries its create's
	// hold so too (its end settles or releases it); on a video's written before it did (no
	// HoldID), HoldUsage is the video's length and picture, which Usage now keeps.
	// HoldPrice is the model's price when the hold was taken, as billing encodes it
	// (billing.Price.Encode): the task is settled at it, whatever the price table says when it
	// finishes. A record without one (written before it was kept) settles at the table's.
	HoldID     string `json:"hold_id,omitempty"`
	HoldAmount int64  `json:"hold_amount,omitempty"`
	HoldUsage  string `json:"hold_usage,omitempty"`
	HoldPrice  string `json:"hold_price,omitempty"`
	// CallbackURL is the client's callback address, never sent upstream. Empty once the
	// receiver answered 410 Gone.
	CallbackURL string `json:"callback_url,omitempty"`
	// CallbackGone is set when the receiver answered 410: no callback is queued again.
	CallbackGone bool `json:"callback_gone,omitempty"`
	// Notified is the last status queued for delivery to CallbackURL.
	Notified string `json:"notified,omitempty"`
	// NoLastFrame is set when the create did not ask for the last frame (return_last_frame):
	// the answer then carries no content.last_frame_url, whatever the upstream says.
	NoLastFrame bool `json:"no_last_frame,omitempty"`
	// Request is the create request in the gateway's canonical form (videotask/adaptor.Request)
	// for a task of an upstream that does not speak the Ark protocol; empty for Ark tasks.
	Request json.RawMessage `json:"request,omitempty"`
	// Usage is what the finished task consumed as its adaptor reported it (a billing.Usage in
	// JSON), for a task of an upstream that does not speak the Ark protocol; see
	// videotask.TaskUsage, which reads it (and an Ark task's answer). On the record of a video
	// that pass-through created, it is the video's length and picture as far as its create and
	// the create's answer say (a billing.Usage in JSON), at which a remix of it is held. On the
	// record of an edit's image task, it is the images the edit asked for, the most its end is
	// charged (passthrough.ImageTaskAsked).
	Usage json.RawMessage `json:"usage,omitempty"`
	// Keep is the copy of the task's result into the operator's bucket (the upload block's
	// keep_results), as package videotask records it: pending from the read that saw the task
	// succeed until the copy is done, the lease of the instance copying it, and the kept
	// objects' keys. Empty when results are not kept.
	Keep json.RawMessage `json:"keep,omitempty"`
	// Endpoint is the endpoint label of the create that made the record (as usage records name
	// it: /v1/videos, /v1/images/generations …) on the record of an object whose end writes a
	// task_finished usage record (a pass-through video or image task, an edit's image task).
	// Empty in records written before it was kept: accounting.createEndpoint names theirs by
	// the record's kind.
	Endpoint string `json:"endpoint,omitempty"`
	// IdempotencyKey, on a video task's record, is the key under which the idempotency guard
	// keeps its create's answer (the account's scope and the SHA-256 of the client's
	// Idempotency-Key, never the key itself): a retry whose answer was never kept (the gateway
	// died after writing the record) finds the task by it (Tasks.TaskOfIdempotencyKey) instead
	// of making another. On any other record, it is the Idempotency-Key of the create that made
	// the record, as the gateway sent it to the provider (scoped to the account: "mg-" and a SHA-256, never the client's
	// value), on the record of an object that pass-through created. A later create of the same
	// account answered with this object is a replay of that create (a provider keeping answers
	// by the key, answering an SDK's retry) only when it sent this same key. Empty when the
	// create sent none, or several, and in records written before it was kept: no create is
	// then a replay.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Effects is what the finish of the task still has to do (EffectHold, EffectCallback), and
	// how its hold ends (EffectChargeEstimate, EffectDeleted), set by the compare-and-set that set
	// Finished and cleared, with Active, by the one that records them done. A record with effects
	// pending stays in the unfinished index (see Watched), so that a watcher does them when the
	// instance that won the finish did not, deciding as the finish did.
	Effects int64 `json:"effects,omitempty"`
	// Version is raised by the backend on every write (1 after CreateTask); ReplaceTask and
	// DeleteTask compare it.
	Version int64 `json:"version,omitempty"`
}

// TaskQuery selects a page of one account's tasks. A list is in order of creation time (Unix
// seconds) and, among tasks created in the same second, of id (bytewise): newest first
// (descending) or oldest first (ascending). Every backend keeps its account index in this order,
// so a cursor (After) goes on exactly where the page before it stopped, without a gap or a repeat.
type TaskQuery struct {
	// Kind restricts the list to one task kind.
	Kind string
	// PageNum counts from 1; PageSize is at least 1.
	PageNum, PageSize int
	// Status, Model and IDs filter the list when not empty.
	Status string
	Model  string
	IDs    []string
	// Oldest lists the oldest task first; the default is newest first.
	Oldest bool
	// After, when set, is a cursor: the list starts behind the task of this id, in the list's
	// order, and Total counts only the tasks behind it. A task that is not in the account's list
	// (unknown, gone, another account's) leaves nothing behind it: the page is empty. The list
	// starts at the cursor's place in the account's index; it does not read the tasks before it.
	After string
	// NoTotal reads only what the page needs: the list stops at the page's last task and Total
	// is 0. The tasks read are then the page's and the skipped ones before it (those of earlier
	// pages, and those the filters leave out), however many tasks the account has.
	NoTotal bool
	// ModelAllowed, when set, keeps only the tasks whose model it allows (or that name none):
	// the list of a key restricted to some models (auth.Identity.ModelFilter). It is a filter
	// as Model is, counted in Total and applied before paging; an After task it leaves out is
	// as one of another account, with nothing behind it.
	ModelAllowed func(model string) bool
}

// TaskPage is one page of a task list, with the number of tasks that matched in all.
type TaskPage struct {
	Tasks []Task
	Total int
}

// Matches reports whether the task passes the query's filters.
func (q TaskQuery) Matches(t Task) bool {
	if q.Kind != "" && t.Kind != q.Kind {
		return false
	}
	if q.Status != "" && t.Status != q.Status {
		return false
	}
	if q.Model != "" && t.Model != q.Model {
		return false
	}
	if len(q.IDs) > 0 && !slices.Contains(q.IDs, t.ID) {
		return false
	}
	return q.modelAllowed(t.Model)
}

// modelAllowed reports whether ModelAllowed lets a task of model be listed (or be the cursor
// After: a task it leaves out is one the list does not have, and leaves nothing behind it).
func (q TaskQuery) modelAllowed(model string) bool {
	return q.ModelAllowed == nil || model == "" || q.ModelAllowed(model)
}

// Unfinished reports whether the task may still change: a video task not yet seen in a terminal
// status (succeeded, failed, cancelled, expired) and not marked Finished.
func (t Task) Unfinished() bool {
	return t.Kind == KindVideo && !Terminal(t.Status) && !t.Finished
}

// The effects of a task's finish (Task.Effects).
const (
	// EffectHold: end the task's hold, give its slot back (if Active) and record its usage.
	EffectHold int64 = 1 << iota
	// EffectCallback: queue the callback of the task's final status (Notified).
	EffectCallback
	// EffectChargeEstimate: the hold of a task that did not succeed is charged its estimate,
	// not released (its provider may still make it, and bill it: accounting.FinishedAtEstimate).
	// Set in the finish's compare-and-set, so that whoever does the effects decides as the
	// finish did.
	EffectChargeEstimate
	// EffectDeleted: the task went after a DELETE its provider accepted; its hold is settled,
	// and its usage recorded, as accounting.StatusDeleted.
	EffectDeleted
)

// Watched reports whether a task belongs in the unfinished index that the watchers start from:
// it is unfinished, or it is a finished video task whose finish still has effects to do.
func (t Task) Watched() bool {
	return t.Unfinished() || t.Kind == KindVideo && t.Effects != 0
}

// Terminal reports whether a task in this status will not change again: succeeded, failed,
// cancelled or expired.
func Terminal(status string) bool {
	switch status {
	case "succeeded", "failed", "cancelled", "expired":
		return true
	}
	return false
}

// Expiry is when the record is to be deleted. The retention is ExpiresAt − CreatedAt
// (DefaultTaskRetention when ExpiresAt is zero) and counts from the task's finish, so that a task
// running past it keeps its record, its active slot and its refund:
//   - an unfinished task's record is kept until CreatedAt + MaxTaskRun + retention, a bound for a
//     task nobody ever sees finish;
//   - a finished task's record (and the record of any other kind of object, which is finished
//     when it is created) is kept until FinishedAt + retention;
//   - a finished record written before FinishedAt existed expires at ExpiresAt.
func (t Task) Expiry() time.Time {
	created := time.Unix(t.CreatedAt, 0)
	retention := DefaultTaskRetention
	if t.ExpiresAt != 0 {
		retention = time.Duration(t.ExpiresAt-t.CreatedAt) * time.Second
	}
	switch {
	case t.Unfinished():
		return created.Add(MaxTaskRun + retention)
	case t.FinishedAt != 0:
		return time.Unix(t.FinishedAt, 0).Add(retention)
	}
	return created.Add(retention)
}

// markFinished sets FinishedAt on the first write of a record that is not Unfinished. Every
// backend calls it on every write, before computing the record's Expiry.
func (t *Task) markFinished(now time.Time) {
	if t.FinishedAt == 0 && !t.Unfinished() {
		t.FinishedAt = now.Unix()
	}
}

// taskHead is the part of a stored Task record that a compare-and-set needs: its Version, the
// fields that never change, and those that decide its index entries and expiry (Unfinished,
// Expiry). Decoding only these skips copying the record's larger fields (Result above all).
type taskHead struct {
	Kind       string `json:"kind"`
	Account    string `json:"account"`
	CreatedAt  int64  `json:"created_at"`
	Status     string `json:"status"`
	ExpiresAt  int64  `json:"expires_at,omitempty"`
	FinishedAt int64  `json:"finished_at,omitempty"`
	Finished   bool   `json:"finished,omitempty"`
	Effects    int64  `json:"effects,omitempty"`
	Version    int64  `json:"version,omitempty"`
}

// task is the head as a Task, with only the head's fields set.
func (h taskHead) task() Task {
	return Task{Kind: h.Kind, Account: h.Account, CreatedAt: h.CreatedAt, Status: h.Status,
		ExpiresAt: h.ExpiresAt, FinishedAt: h.FinishedAt, Finished: h.Finished, Effects: h.Effects, Version: h.Version}
}

// sameTask reports whether task, a changed record given to a compare-and-set, is of the stored
// task with that account and creation time, as far as task says (a record that leaves them
// unset takes the stored ones). A task id that an upstream hands out again after the first task
// was deleted starts again at Version 1: a change made from the first task's record must not
// replace the second's.
func sameTask(task *Task, account string, createdAt int64) bool {
	return (task.Account == "" || task.Account == account) && (task.CreatedAt == 0 || task.CreatedAt == createdAt)
}

// indexedByIdempotencyKey reports whether the create of t indexes its IdempotencyKey
// (Tasks.TaskOfIdempotencyKey): a video task's, whose create kept one.
func indexedByIdempotencyKey(t Task) bool {
	return t.Kind == KindVideo && t.IdempotencyKey != ""
}

// keyedTask checks that t, found by an index entry of key, is the task whose create carried key:
// the entry may outlive a record taken back or deleted, and a later record under the same id.
func keyedTask(t Task, err error, key string) (Task, error) {
	if err != nil {
		return Task{}, err
	}
	if !indexedByIdempotencyKey(t) || t.IdempotencyKey != key {
		return Task{}, ErrNotFound
	}
	return t, nil
}
