package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// ledgerNearPage is how many entries the task page reads forward from the moment it looks for
// (see entriesNear).
const ledgerNearPage = 500

// ledgerClockSlack is how much earlier than the moment it looks for the task page starts reading
// the ledger: entries are dated by the clock of the instance that made them.
const ledgerClockSlack = 5 * time.Second

type taskData struct {
	Task     storage.Task
	Running  bool // not finished yet: the page reloads itself
	VideoURL string
	Result   string
	// Error is a failed task's error as its answer gives it ("code: message"; "" for none).
	Error string
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
	// CostText is what the task cost, for its facts: the settlement's charge, what is held while
	// the hold is open, nothing for a released hold, or the metered cost of a record older than
	// the ledger (Task.Cost, which nothing sets any more: shown only when it is not 0).
	CostText string
}

// timelineEvent is one moment of a task's life as the store recorded it.
type timelineEvent struct {
	At   time.Time
	What string
}

func (h *Handler) task(w http.ResponseWriter, r *http.Request, s *session, id string) {
	t, err := h.Store.Task(r.Context(), id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !s.seesTask(t.Account, t.Model)) {
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
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if len(t.Result) > 0 {
		d.Result = readableJSON(t.Result)
		if json.Unmarshal(t.Result, &result) == nil {
			if u, err := url.Parse(result.Content.VideoURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
				d.VideoURL = u.String()
			}
			if e := result.Error; e != nil && (e.Code != "" || e.Message != "") {
				d.Error = strings.TrimPrefix(e.Code+": "+e.Message, ": ")
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
	d.CostText = costText(d)
	h.show(w, s, "task", "Task "+t.ID, d)
}

// readableJSON indents a stored answer for the page, with its text as written: the store keeps
// <, > and & as \u escapes (encoding/json's default), which would show a provider's message as
// escape codes; the page's template escapes the text itself. Numbers keep their digits. An
// answer that is not JSON is shown as stored.
func readableJSON(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// taskMoney reads the task's hold and finds its ledger entries (the hold, its settlement or
// release): the ledger has no index by hold, so it finds, by a binary search over the entry ids
// (which count from 1), the entries made around the hold's creation and, if the end is not among
// them, around the task's finish, and reads a page forward from each. A page costs a few dozen
// single-entry reads and two pages at most, however long the account's ledger.
func (h *Handler) taskMoney(ctx context.Context, d *taskData) error {
	hold, err := h.Store.HoldByID(ctx, d.Task.HoldID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // a hold of a record older than the ledger
	} else if err != nil {
		return err
	}
	d.Hold, d.HoldAmount = &hold, money.Format(hold.Amount)
	seen := map[string]bool{}
	ended := func() bool {
		for _, e := range d.Entries {
			if e.Kind == storage.EntrySettle || e.Kind == storage.EntryRelease {
				return true
			}
		}
		return false
	}
	moments := []time.Time{hold.Created}
	if d.Task.FinishedAt > 0 {
		moments = append(moments, time.Unix(d.Task.FinishedAt, 0))
	}
	for i, at := range moments {
		if i > 0 && ended() {
			break
		}
		entries, err := h.entriesNear(ctx, d.Task.Account, at.Add(-ledgerClockSlack))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.HoldID == hold.ID && !seen[e.ID] {
				seen[e.ID] = true
				d.Entries = append(d.Entries, keyadmin.EntryOf(e))
			}
		}
	}
	d.EntriesCut = hold.State != storage.HoldOpen && !ended()
	return nil
}

// entriesNear returns a page of the account's ledger from the first entry made at or after at.
func (h *Handler) entriesNear(ctx context.Context, account string, at time.Time) ([]storage.LedgerEntry, error) {
	newest, _, err := h.Store.LedgerPageNewest(ctx, account, "", 1)
	if err != nil || len(newest) == 0 {
		return nil, err
	}
	hi, err := strconv.ParseInt(newest[0].ID, 10, 64)
	if err != nil {
		return nil, err
	}
	lo := int64(0) // the largest id known to be before at (0: none)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		e, _, err := h.Store.LedgerPageNewest(ctx, account, strconv.FormatInt(mid+1, 10), 1)
		if err != nil {
			return nil, err
		}
		if len(e) == 1 && e[0].Time.Before(at) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	after := ""
	if lo > 0 {
		after = strconv.FormatInt(lo, 10)
	}
	entries, _, err := h.Store.LedgerPage(ctx, account, after, ledgerNearPage)
	return entries, err
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

// costText states what the task cost: the charge of its hold's settlement, as the ledger
// entry has it (a decimal string), never a figure the ledger does not hold.
func costText(d taskData) string {
	for _, e := range d.Entries {
		if e.Kind == storage.EntrySettle {
			return e.Charged + " charged"
		}
	}
	switch {
	case d.Hold != nil && d.Hold.State == storage.HoldOpen:
		return d.HoldAmount + " held; charged when the task ends"
	case d.Hold != nil && d.Hold.State == storage.HoldReleased:
		return "nothing: the hold was released"
	case d.Hold != nil:
		return "settled; the entry is in the account's ledger (see below)"
	case d.Task.Cost != 0:
		return strconv.FormatInt(d.Task.Cost, 10) + " (metered before billing)"
	}
	return "nothing: no money was held"
}
