package console

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/handlers/usage"
)

// chartDays is the number of days of the daily usage charts.
const chartDays = 14

// UsageTotals reads the usage day totals (see usage.Recorder.Report): counters per day,
// account and model, so a chart of days reads a few counters a day, never the records.
type UsageTotals interface {
	Report(ctx context.Context, q usage.Query) ([]usage.Row, error)
}

// chartRange is the first and last day (UTC) of the daily charts up to now.
func chartRange(now time.Time) (from, to time.Time) {
	to = now.UTC().Truncate(24 * time.Hour)
	return to.AddDate(0, 0, -(chartDays - 1)), to
}

// dayCharts charts the last chartDays days up to today of account's usage (all accounts when
// empty): requests and money spent per day, by model, of the models modelAllowed allows (nil:
// every model).
func dayCharts(ctx context.Context, totals UsageTotals, account string, modelAllowed func(string) bool, now time.Time) ([]Chart, error) {
	from, to := chartRange(now)
	rows, err := totals.Report(ctx, usage.Query{Account: account, From: from.Format(time.DateOnly),
		To: to.Format(time.DateOnly), GroupBy: []string{"day", "model"}, ModelAllowed: modelAllowed})
	if err != nil {
		return nil, err
	}
	x := make([]int64, 0, chartDays)
	dayIndex := map[string]int{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		dayIndex[d.Format(time.DateOnly)] = len(x)
		x = append(x, d.Unix())
	}
	make1 := func(id, title, unit, field string, divisor float64) Chart {
		byModel := map[string][]*float64{}
		for _, r := range rows {
			i, ok := dayIndex[r.Day]
			if !ok {
				continue
			}
			vals := byModel[orNone(r.Model)]
			if vals == nil {
				vals = make([]*float64, len(x))
				for j := range vals {
					vals[j] = new(float64(0))
				}
				byModel[orNone(r.Model)] = vals
			}
			*vals[i] += float64(r.Values[field]) / divisor
		}
		c := Chart{ID: id, Title: title, Unit: unit, X: x}
		for name, vals := range byModel {
			c.Series = append(c.Series, Series{Name: name, Values: vals})
		}
		sort.Slice(c.Series, func(i, j int) bool { return c.Series[i].Name < c.Series[j].Name })
		c.Rows = tableRows(c)
		return c
	}
	return []Chart{
		make1("days-requests", "Requests per day by model", "requests", usage.FieldRequests, 1),
		make1("days-spend", "Spend per day by model", "currency units", usage.FieldAmount, 1e6),
	}, nil
}

// dayTotals sums the last chartDays days up to today of account's usage of the models
// modelAllowed allows: the figures of an account page whose member may see only those models.
func dayTotals(ctx context.Context, totals UsageTotals, account string, modelAllowed func(string) bool, now time.Time) (keyadmin.AccountUsage, error) {
	from, to := chartRange(now)
	rows, err := totals.Report(ctx, usage.Query{Account: account, From: from.Format(time.DateOnly),
		To: to.Format(time.DateOnly), ModelAllowed: modelAllowed})
	var u keyadmin.AccountUsage
	for _, r := range rows {
		u.Requests += r.Values[usage.FieldRequests]
		u.Tasks += r.Values[usage.FieldTasks]
		u.QuotaUsed += billing.Money(r.Values[usage.FieldAmount])
	}
	return u, err
}

// tableRows writes a chart's values as the rows of a table: one row per time, one column per
// series, "" where a series has no value.
func tableRows(c Chart) []ChartRow {
	rows := make([]ChartRow, len(c.X))
	for i, at := range c.X {
		rows[i] = ChartRow{Time: at, Values: make([]string, len(c.Series))}
		for j, s := range c.Series {
			if i < len(s.Values) && s.Values[i] != nil {
				rows[i].Values[j] = strconv.FormatFloat(*s.Values[i], 'f', -1, 64)
			}
		}
	}
	return rows
}
