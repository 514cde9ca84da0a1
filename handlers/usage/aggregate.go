package usage

import (
	"context"
	"net/url"
	"slices"
	"strings"
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
)

// Fields lists the aggregated fields in report order.
var Fields = []string{FieldRequests, FieldTasks, FieldCost, FieldPromptTokens, FieldCompletionTokens, FieldTotalTokens}

const (
	indexPrefix   = "usage/days/"
	counterPrefix = "usage/agg/"
	dayLayout     = time.DateOnly
)

// aggKey is the (day, account, model) part of the index key and the counter names. The account
// and the model are escaped, so neither can contain the separator.
func aggKey(day, account, model string) string {
	return day + "/" + url.PathEscape(account) + "/" + url.PathEscape(model)
}

func counterName(key, field string) string { return counterPrefix + key + "/" + field }

// aggregate adds a record to its day's counters.
func (r *Recorder) aggregate(rec Record) {
	if r.Counters == nil || rec.Account == "" {
		return
	}
	key := aggKey(rec.Time.UTC().Format(dayLayout), rec.Account, rec.Model)
	if r.Index != nil {
		if _, seen := r.marked.Load(key); !seen {
			if err := r.Index.Mark(context.Background(), indexPrefix+key); err == nil {
				r.marked.Store(key, true)
			} else {
				r.Logger.Error("indexing usage aggregates", zap.String("day", rec.Time.UTC().Format(dayLayout)), zap.Error(err))
			}
		}
	}
	if rec.Event == EventRequest || rec.Event == EventTaskCreated {
		r.Counters.Add(counterName(key, FieldRequests), 1)
	}
	if rec.Event == EventTaskCreated {
		r.Counters.Add(counterName(key, FieldTasks), 1)
	}
	if rec.Cost != 0 {
		r.Counters.Add(counterName(key, FieldCost), rec.Cost)
	}
	if rec.Tokens.Known() {
		r.Counters.Add(counterName(key, FieldPromptTokens), rec.Tokens.Prompt)
		r.Counters.Add(counterName(key, FieldCompletionTokens), rec.Tokens.Completion)
		r.Counters.Add(counterName(key, FieldTotalTokens), rec.Tokens.Total)
	}
}

// Query selects and groups aggregates.
type Query struct {
	// Account selects one account; empty means all.
	Account string
	// From and To are the first and last day (UTC, inclusive), as YYYY-MM-DD.
	From, To string
	// GroupBy names the dimensions kept apart: any of "account", "model", "day". The others
	// are summed over.
	GroupBy []string
}

// Row is one group of a report. Dimensions that are not grouped by are empty.
type Row struct {
	Account string           `json:"account,omitempty"`
	Model   string           `json:"model,omitempty"`
	Day     string           `json:"day,omitempty"`
	Values  map[string]int64 `json:"-"`
}

// Report sums the aggregates that match q, one row per group, ordered by day, account, model.
func (r *Recorder) Report(ctx context.Context, q Query) ([]Row, error) {
	by := map[string]bool{}
	for _, g := range q.GroupBy {
		by[g] = true
	}
	groups := map[[3]string]*Row{}
	var keys []string
	err := r.Index.Marked(ctx, indexPrefix, func(k string) bool {
		key := strings.TrimPrefix(k, indexPrefix)
		day, rest, _ := strings.Cut(key, "/")
		if (q.From != "" && day < q.From) || (q.To != "" && day > q.To) {
			return true
		}
		acctEsc, modelEsc, _ := strings.Cut(rest, "/")
		account, err1 := url.PathUnescape(acctEsc)
		model, err2 := url.PathUnescape(modelEsc)
		if err1 != nil || err2 != nil || (q.Account != "" && account != q.Account) {
			return true
		}
		keys = append(keys, key, day, account, model)
		return true
	})
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(keys); i += 4 {
		key, day, account, model := keys[i], keys[i+1], keys[i+2], keys[i+3]
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
			v, err := r.Counters.Value(ctx, counterName(key, f))
			if err != nil {
				return nil, err
			}
			row.Values[f] += v
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
