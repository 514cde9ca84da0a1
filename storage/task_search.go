package storage

import (
	"fmt"
	"strconv"
	"strings"
)

// TaskSearch selects a page of one account's tasks, newest first, from a cursor. Unlike
// ListTasks it counts no total: it reads the account's index from the cursor and stops at a full
// page, at From, or after Scan records, so a page costs at most Scan record reads however many
// tasks the account has.
type TaskSearch struct {
	// Kind, Status and Model filter when not empty.
	Kind, Status, Model string
	// From and To bound CreatedAt (Unix seconds, both inclusive); 0 leaves that side open.
	From, To int64
	// Before is the Next of the previous page: the search goes on with the tasks after it
	// (older); "" starts from the newest (or from To).
	Before string
	// Limit is the page size (at least 1). Scan bounds the records read (at least Limit).
	Limit, Scan int
	// ModelAllowed, when set, keeps only the tasks whose model it allows (or that name none), as
	// TaskQuery.ModelAllowed does: the search of a key restricted to some models.
	ModelAllowed func(model string) bool
}

// TaskSearchPage is one page of a search. Next is the cursor to go on from ("" when the account
// has no older tasks in the range); a page cut short by Scan has fewer than Limit tasks and a
// Next.
type TaskSearchPage struct {
	Tasks []Task
	Next  string
}

// Matches reports whether t passes the search's filters (not its time range).
func (q TaskSearch) Matches(t Task) bool {
	return TaskQuery{Kind: q.Kind, Status: q.Status, Model: q.Model, ModelAllowed: q.ModelAllowed}.Matches(t)
}

// normal sets Limit and Scan to their least values.
func (q *TaskSearch) normal() {
	q.Limit = max(q.Limit, 1)
	q.Scan = max(q.Scan, q.Limit)
}

// taskCursor is the cursor of a task: its creation time and id.
func taskCursor(created int64, id string) string {
	return string(appendTaskCursor(make([]byte, 0, 21+len(id)), created, id))
}

// appendTaskCursor appends taskCursor(created, id) to dst: the creation time as 20 decimal
// digits (fmt's %020d), "/" and the id.
func appendTaskCursor(dst []byte, created int64, id string) []byte {
	if created < 0 {
		return fmt.Appendf(dst, "%020d/%s", created, id)
	}
	var digits [20]byte
	n := strconv.AppendInt(digits[:0], created, 10)
	for range 20 - len(n) {
		dst = append(dst, '0')
	}
	return append(append(append(dst, n...), '/'), id...)
}

// parseTaskCursor reads a cursor that taskCursor wrote.
func parseTaskCursor(c string) (created int64, id string, err error) {
	digits, id, ok := strings.Cut(c, "/")
	if ok {
		created, err = strconv.ParseInt(digits, 10, 64)
	}
	if !ok || err != nil || len(digits) != 20 || id == "" {
		return 0, "", fmt.Errorf("tasks: bad cursor %q", c)
	}
	return created, id, nil
}
