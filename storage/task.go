package storage

import (
	"encoding/json"
	"slices"
	"time"
)

// Task kinds: the task families whose ownership mediagw records.
const (
	KindVideo = "video"
	KindImage = "image"
)

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
	Model    string `json:"model"`
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
	// ExpiresAt is when the record is deleted (Unix seconds). Zero means DefaultTaskRetention
	// after CreatedAt. Writes never set less than a minute.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// Active is true when the task holds one of its key's active-task slots, which it gives back
	// when it is first seen in a terminal state (then Finished is set).
	Active   bool `json:"active,omitempty"`
	Finished bool `json:"finished,omitempty"`
	// Cost is the cost metered for the task; Held is the part taken from a limited quota.
	Cost int64 `json:"cost,omitempty"`
	Held int64 `json:"held,omitempty"`
	// CallbackURL is the client's callback address, never sent upstream.
	CallbackURL string `json:"callback_url,omitempty"`
	// Notified is the last status queued for delivery to CallbackURL.
	Notified string `json:"notified,omitempty"`
}

// TaskQuery selects a page of one account's tasks.
type TaskQuery struct {
	// Kind restricts the list to one task kind.
	Kind string
	// PageNum counts from 1; PageSize is at least 1.
	PageNum, PageSize int
	// Status, Model and IDs filter the list when not empty.
	Status string
	Model  string
	IDs    []string
}

// TaskPage is one page of a task list, with the number of tasks that matched in all.
type TaskPage struct {
	Tasks []Task
	Total int
}

// matches reports whether the task passes the query's filters.
func (q TaskQuery) matches(t Task) bool {
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
	return true
}

// Unfinished reports whether the task may still change: a video task not yet seen in a terminal
// status (succeeded, failed, cancelled, expired).
func (t Task) Unfinished() bool {
	return t.Kind == KindVideo && !Terminal(t.Status)
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

// expiry is when the record is to be deleted.
func (t Task) expiry() time.Time {
	if t.ExpiresAt != 0 {
		return time.Unix(t.ExpiresAt, 0)
	}
	return time.Unix(t.CreatedAt, 0).Add(DefaultTaskRetention)
}
