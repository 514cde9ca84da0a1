package usage

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Aggregated fields, one store counter each per (day, account, model).
const (
	FieldRequests         = "requests"
	FieldTasks            = "tasks"
	FieldCost             = "cost"
	FieldPromptTokens     = "prompt_tokens"
	FieldCompletionTokens = "completion_tokens"
	FieldTotalTokens      = "total_tokens"
	// FieldAmount is the money charged, in micro-units (reports print it as a decimal string).
	FieldAmount = "amount"
)

// Fields lists the aggregated fields in report order.
var Fields = [...]string{FieldRequests, FieldTasks, FieldCost, FieldPromptTokens, FieldCompletionTokens, FieldTotalTokens, FieldAmount}

const (
	counterPrefix = "usage/agg/"
	dayLayout     = time.DateOnly
	// DefaultDays is how many days a report covers when from is not given.
	DefaultDays = 31
	// MaxDays bounds the days of one report.
	MaxDays = 366
)

// pairKey is the (account, model) part of the counter names. Both are escaped, so neither can
// contain the separator.
func pairKey(account, model string) string {
	return url.PathEscape(account) + "/" + url.PathEscape(model)
}

func counterName(day, pair, field string) string {
	return counterPrefix + day + "/" + pair + "/" + field
}

// aggDay is a day (UTC) and aggPair an (account, model) pair, as map keys that cost nothing to
// build from a record.
type (
	aggDay struct {
		year  int
		month time.Month
		day   int
	}
	aggPair struct{ account, model string }
)

// aggNames are the counter names of one (day, account, model), in the order of Fields.
type aggNames [len(Fields)]string

// aggCounters are the counter names of one day's aggregates of pair; the day begins at start
// (Unix seconds).
type aggCounters struct {
	start int64
	pair  aggPair
	names aggNames
}

// counters returns the counter names of rec's aggregates, marking them in the index the first
// time this recorder sees them. Only the current day's names are kept, and the names used last
// are tried first: records come in runs of one account and model.
func (r *Recorder) counters(rec Record) *aggNames {
	pair := aggPair{rec.Account, rec.Model}
	if c := r.lastCounters.Load(); c != nil && c.pair == pair {
		if s := rec.Time.Unix(); s >= c.start && s < c.start+24*60*60 {
			return &c.names
		}
	}
	t := rec.Time.UTC()
	y, m, d := t.Date()
	day := aggDay{y, m, d}
	r.mu.Lock()
	if r.day != day || r.names == nil {
		r.day, r.names = day, map[aggPair]*aggCounters{}
	}
	c := r.names[pair]
	r.mu.Unlock()
	if c != nil {
		r.lastCounters.Store(c)
		return &c.names
	}
	dayText, key := t.Format(dayLayout), pairKey(rec.Account, rec.Model)
	c = &aggCounters{start: time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), pair: pair}
	for i, f := range Fields {
		c.names[i] = counterName(dayText, key, f)
	}
	if r.Index != nil {
		if err := r.Index.Mark(context.Background(), dayText, key); err != nil {
			r.Logger.Error("indexing usage aggregates", zap.String("day", dayText), zap.Error(err))
			return &c.names // marked again with the next record
		}
	}
	r.mu.Lock()
	if r.day == day {
		r.names[pair] = c
	}
	r.mu.Unlock()
	r.lastCounters.Store(c)
	return &c.names
}

// aggregate adds a record to its day's counters.
func (r *Recorder) aggregate(rec Record) {
	if r.Counters == nil || rec.Account == "" {
		return
	}
	names := r.counters(rec)
	// In the order of Fields; from a pool, as Counters (an interface) would make every record
	// allocate them.
	deltas := deltaLists.Get().(*[len(Fields)]int64)
	defer deltaLists.Put(deltas)
	*deltas = [len(Fields)]int64{}
	if rec.Event == EventRequest || rec.Event == EventTaskCreated {
		deltas[0] = 1
	}
	if rec.Event == EventTaskCreated {
		deltas[1] = 1
	}
	deltas[2], deltas[6] = rec.Cost, rec.Amount
	if rec.Tokens.Known() {
		deltas[3], deltas[4], deltas[5] = rec.Tokens.Prompt, rec.Tokens.Completion, rec.Tokens.Total
	}
	r.Counters.AddAll(names[:], deltas[:])
}

// deltaLists holds aggregate's deltas between records.
var deltaLists = sync.Pool{New: func() any { return new([len(Fields)]int64) }}

// Query selects and groups aggregates.
type Query struct {
	// Account selects one account; empty means all.
	Account string
	// From and To are the first and last day (UTC, inclusive), as YYYY-MM-DD.
	From, To string
	// GroupBy names the dimensions kept apart: any of "account", "model", "day". The others
	// are summed over.
	GroupBy []string
	// ModelAllowed, when set, counts only the aggregates of the models it allows (and those that
	// name no model), as a key restricted to some models sees its account's work
	// (auth.Identity.ModelFilter); nil counts every model.
	ModelAllowed func(model string) bool
}

// Row is one group of a report. Dimensions that are not grouped by are empty.
type Row struct {
	Account string           `json:"account,omitempty"`
	Model   string           `json:"model,omitempty"`
	Day     string           `json:"day,omitempty"`
	Values  map[string]int64 `json:"-"`
}

// Report sums the aggregates that match q, one row per group, ordered by day, account, model.
// q's days must be set (see ParseQuery).
func (r *Recorder) Report(ctx context.Context, q Query) ([]Row, error) {
	by := map[string]bool{}
	for _, g := range q.GroupBy {
		by[g] = true
	}
	from, err1 := time.Parse(dayLayout, q.From)
	to, err2 := time.Parse(dayLayout, q.To)
	if err1 != nil || err2 != nil || to.Before(from) || to.Sub(from) > MaxDays*24*time.Hour {
		return nil, fmt.Errorf("a report needs from and to, at most %d days apart", MaxDays)
	}
	groups := map[[3]string]*Row{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		day := d.Format(dayLayout)
		pairs := map[string]bool{}
		if err := r.Index.Marked(ctx, day, func(pair string) { pairs[pair] = true }); err != nil {
			return nil, err
		}
		for pair := range pairs {
			acctEsc, modelEsc, _ := strings.Cut(pair, "/")
			account, err1 := url.PathUnescape(acctEsc)
			model, err2 := url.PathUnescape(modelEsc)
			if err1 != nil || err2 != nil || (q.Account != "" && account != q.Account) ||
				(q.ModelAllowed != nil && model != "" && !q.ModelAllowed(model)) {
				continue
			}
			g := [3]string{}
			if by["day"] {
				g[0] = day
			}
			if by["account"] {
				g[1] = account
			}
			if by["model"] {
				g[2] = model
			}
			row := groups[g]
			if row == nil {
				row = &Row{Day: g[0], Account: g[1], Model: g[2], Values: map[string]int64{}}
				groups[g] = row
			}
			for _, f := range Fields {
				v, err := r.Counters.Value(ctx, counterName(day, pair, f))
				if err != nil {
					return nil, err
				}
				row.Values[f] += v
			}
		}
	}
	rows := make([]Row, 0, len(groups))
	for _, row := range groups {
		rows = append(rows, *row)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return strings.Compare(a.Day+"\x00"+a.Account+"\x00"+a.Model, b.Day+"\x00"+b.Account+"\x00"+b.Model)
	})
	return rows, nil
}
