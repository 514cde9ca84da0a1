package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// Bounds of the search for a task's ledger entries: the ledger has no index by task, so the
// task page reads the account's ledger back from the newest entry, a page at a time, until
// entries older than the task's hold, and at most ledgerSearchPages pages.
const (
	ledgerSearchPage  = 500
	ledgerSearchPages = 10
)

type taskData struct {
	Task     storage.Task
	Running  bool // not finished yet: the page reloads itself
	VideoURL string
	Result   string
	// Operator pages show the upstream's address; members see its name only.
	Operator   bool
	Timeline   []timelineEvent
	Deliveries []storage.Delivery
	// Hold is the ledger hold that pays for the task (nil: none); Entries its ledger entries,
	// and EntriesCut is set when the search for them stopped at its bound.
	Hold       *storage.Hold
	HoldAmount string
	Entries    []keyadmin.EntryView
	EntriesCut bool
}

// timelineEvent is one moment of a task's life as the store recorded it.
type timelineEvent struct {
	At   time.Time
	What string
}

func (h *Handler) task(w http.ResponseWriter, r *http.Request, s *session, id string) {
	t, err := h.Store.Task(r.Context(), id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !s.sees(t.Account)) {
		h.notFound(w, r, s)
		return
	}
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	d := taskData{Task: t, Running: !storage.Terminal(t.Status), Operator: s.user.Operator()}
	var result struct {
		Content struct {
			VideoURL string `json:"video_url"`
		} `json:"content"`
	}
	if len(t.Result) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, t.Result, "", "  ") == nil {
			d.Result = pretty.String()
		}
		if json.Unmarshal(t.Result, &result) == nil {
			if u, err := url.Parse(result.Content.VideoURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
				d.VideoURL = u.String()
			}
		}
	}
	if d.Deliveries, err = h.Store.TaskDeliveries(r.Context(), t.ID); err != nil {
		h.failErr(w, r, s, err)
		return
	}
	if t.HoldID != "" {
		if err := h.taskMoney(r.Context(), &d); err != nil {
			h.failErr(w, r, s, err)
			return
		}
	}
	d.Timeline = timeline(d)
	h.show(w, s, "task", "Task "+t.ID, d)
}

// taskMoney reads the task's hold and finds its ledger entries (the hold, its settlement or
// release) by reading the account's ledger back from the newest entry, within bounds.
func (h *Handler) taskMoney(ctx context.Context, d *taskData) error {
	hold, err := h.Store.HoldByID(ctx, d.Task.HoldID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // a hold of a record older than the ledger
	} else if err != nil {
		return err
	}
	d.Hold, d.HoldAmount = &hold, money.Format(hold.Amount)
	before := ""
	for range ledgerSearchPages {
		entries, next, err := h.Store.LedgerPageNewest(ctx, d.Task.Account, before, ledgerSearchPage)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.HoldID == hold.ID {
				d.Entries = append(d.Entries, keyadmin.EntryOf(e))
			}
		}
		if next == "" || len(entries) == 0 || entries[len(entries)-1].Time.Before(hold.Created.Add(-time.Minute)) {
			return nil
		}
		before = next
	}
	d.EntriesCut = len(d.Entries) < 2
	return nil
}

// timeline puts the recorded moments of a task in order: its creation, its hold, each callback
// attempt, its last read from the upstream, its finish and its settlement.
func timeline(d taskData) []timelineEvent {
	t := d.Task
	var ev []timelineEvent
	add := func(at time.Time, what string) {
		if !at.IsZero() && at.Unix() > 0 {
			ev = append(ev, timelineEvent{At: at.UTC(), What: what})
		}
	}
	add(time.Unix(t.CreatedAt, 0), "created upstream ("+t.Provider+")")
	if d.Hold != nil {
		add(d.Hold.Created, "hold of "+d.HoldAmount+" taken")
	}
	for _, e := range d.Entries {
		if e.Kind == storage.EntrySettle || e.Kind == storage.EntryRelease {
			if at, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
				what := "hold released"
				if e.Kind == storage.EntrySettle {
					what = "settled: charged " + e.Charged
				}
				add(at, what)
			}
		}
	}
	for _, c := range d.Deliveries {
		add(c.Time(), "callback for "+c.Status+": "+c.Outcome)
	}
	if t.RefreshedAt > 0 {
		add(time.Unix(0, t.RefreshedAt), "last read from the upstream")
	}
	if t.FinishedAt > 0 {
		add(time.Unix(t.FinishedAt, 0), "finished: "+t.Status)
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].At.Before(ev[j].At) })
	return ev
}
