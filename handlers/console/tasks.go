package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// Task search bounds: a page shows tasksPageSize tasks and reads at most tasksScan records, so a
// page costs the same with a hundred tasks or a million; a rare filter is followed page by page.
const (
	tasksPageSize = 50
	tasksScan     = 2000
)

// taskStatuses are the statuses the task search offers.
var taskStatuses = []string{"queued", "running", "succeeded", "failed", "cancelled", "expired"}

type tasksData struct {
	Account, Status, Model string
	// From and To are the days (YYYY-MM-DD, UTC, inclusive) the search's tasks were created in.
	From, To string
	// Before is this page's cursor ("" for the newest); Older links the next page.
	Before string
	Older  string
	// CutShort is set when the page read tasksScan tasks without filling up.
	CutShort bool
	Tasks    []storage.Task
	Statuses []string
}

// tasks searches tasks newest first, by status, model and creation days, a page at a time
// through the store's cursor: an operator's in one account or across all (the index of every
// task by creation time), a member's in their own account whatever the query says. A task id
// goes straight to the task's page, which answers 404 for another account's task.
func (h *Handler) tasks(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("id")); id != "" {
		http.Redirect(w, r, "/tasks/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	d := tasksData{Account: strings.TrimSpace(q.Get("account")), Status: q.Get("status"), Model: strings.TrimSpace(q.Get("model")),
		From: q.Get("from"), To: q.Get("to"), Before: q.Get("before"), Statuses: taskStatuses}
	if d.Status != "" && !slices.Contains(taskStatuses, d.Status) {
		h.fail(w, r, s, http.StatusBadRequest, "A task's status is one of "+strings.Join(taskStatuses, ", ")+", or left out for any.")
		return
	}
	if !s.user.Operator() {
		d.Account = s.user.Account
	}
	search := storage.TaskSearch{Kind: storage.KindVideo, Status: d.Status, Model: d.Model, Before: d.Before,
		Limit: tasksPageSize, Scan: tasksScan}
	if !s.user.Operator() {
		search.ModelAllowed = s.identity().ModelFilter() // a key restricted to some models sees only theirs
	}
	for _, day := range []struct {
		text string
		dst  *int64
		end  bool
	}{{d.From, &search.From, false}, {d.To, &search.To, true}} {
		if day.text == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, day.text)
		if err != nil {
			h.fail(w, r, s, http.StatusBadRequest, "A day is written YYYY-MM-DD, such as 2026-03-01.")
			return
		}
		if day.end {
			t = t.Add(24*time.Hour - time.Second)
		}
		*day.dst = t.Unix()
	}
	var page storage.TaskSearchPage
	var err error
	switch {
	case d.Account != "":
		page, err = h.Store.SearchTasks(r.Context(), d.Account, search)
	case s.user.Operator(): // a member's search always names their account, set above
		page, err = h.Store.SearchAllTasks(r.Context(), search)
	}
	if err != nil && d.Before != "" {
		h.fail(w, r, s, http.StatusBadRequest, "This page's link is broken: start the search again.")
		return
	}
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	d.Tasks, d.CutShort = page.Tasks, page.Next != "" && len(page.Tasks) < tasksPageSize
	if page.Next != "" {
		next := url.Values{"account": {d.Account}, "status": {d.Status}, "model": {d.Model}, "from": {d.From}, "to": {d.To}, "before": {page.Next}}
		d.Older = "/tasks?" + next.Encode()
	}
	h.show(w, s, "tasks", "Tasks", d)
}
