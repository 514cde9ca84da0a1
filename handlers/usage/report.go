package usage

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/csvtext"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/internal/strictquery"
)

// MarshalJSON writes a row flat: the grouped dimensions, then every aggregated field.
func (r Row) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(Fields)+3)
	for _, d := range []struct{ name, val string }{{"day", r.Day}, {"account", r.Account}, {"model", r.Model}} {
		if d.val != "" {
			m[d.name] = d.val
		}
	}
	for _, f := range Fields {
		m[f] = r.Values[f]
	}
	m[FieldAmount] = money.Format(r.Values[FieldAmount])
	return json.Marshal(m)
}

// Dimensions a report can be grouped by.
var Dimensions = []string{"day", "account", "model"}

// ServeReport answers GET /mediagw/usage?account=&from=&to=&group_by=model,day on the admin
// endpoint: JSON {"from","to","account","group_by","rows":[…]}, or CSV (a header line, then one
// line per row) when the request accepts text/csv or asks for format=csv. from and to are days (YYYY-MM-DD, UTC,
// inclusive; default: the last 31 days up to today; at most 366 days); group_by lists dimensions
// among day, account and model (default: day,account,model).
func (r *Recorder) ServeReport(w http.ResponseWriter, req *http.Request) {
	r.ServeReportOf(w, req, nil)
}

// ServeReportOf is ServeReport counting only the models modelAllowed allows (see
// Query.ModelAllowed; nil: every model), for the console's member logged in with a key
// restricted to some models.
func (r *Recorder) ServeReportOf(w http.ResponseWriter, req *http.Request, modelAllowed func(model string) bool) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		writeError(w, http.StatusMethodNotAllowed, "method "+req.Method+" not allowed here")
		return
	}
	v, err := strictquery.Read(req.URL.RawQuery, queryNames...)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	q, err := parseValues(v, r.now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	q.ModelAllowed = modelAllowed
	rows, err := r.Report(req.Context(), q)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading usage aggregates: "+err.Error())
		return
	}
	if wantsCSV(req, v.Get("format")) {
		writeCSV(w, q, rows)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(map[string]any{
		"from": q.From, "to": q.To, "account": q.Account, "group_by": q.GroupBy, "rows": rows,
	}); err != nil {
		r.Logger.Debug("writing a usage report", zap.Error(err))
	}
}

// queryNames are the report's parameters: each is given at most once.
var queryNames = []string{"account", "from", "to", "group_by", "format"}

// ParseQuery reads a report query from the URL. to defaults to today (UTC) and from to
// DefaultDays days before to. A query that does not decode (a bad escape, a ';') and a
// parameter given twice are errors (see strictquery.Read), never a report of another account
// or days.
func ParseQuery(req *http.Request, now time.Time) (Query, error) {
	v, err := strictquery.Read(req.URL.RawQuery, queryNames...)
	if err != nil {
		return Query{}, err
	}
	return parseValues(v, now)
}

// parseValues is ParseQuery of the query's values.
func parseValues(v url.Values, now time.Time) (Query, error) {
	q := Query{Account: v.Get("account"), From: v.Get("from"), To: v.Get("to")}
	for _, d := range []struct{ name, val string }{{"from", q.From}, {"to", q.To}} {
		if d.val == "" {
			continue
		}
		if _, err := time.Parse(dayLayout, d.val); err != nil {
			return q, fmt.Errorf("%s must be a day as YYYY-MM-DD", d.name)
		}
	}
	if q.To == "" {
		q.To = now.UTC().Format(dayLayout)
	}
	if q.From == "" {
		to, _ := time.Parse(dayLayout, q.To)
		q.From = to.AddDate(0, 0, 1-DefaultDays).Format(dayLayout)
	}
	from, _ := time.Parse(dayLayout, q.From)
	to, _ := time.Parse(dayLayout, q.To)
	if from.After(to) {
		return q, fmt.Errorf("from must not be after to")
	}
	if to.Sub(from) >= MaxDays*24*time.Hour {
		return q, fmt.Errorf("a report covers at most %d days", MaxDays)
	}
	group := v.Get("group_by")
	if group == "" {
		group = strings.Join(Dimensions, ",")
	}
	seen := map[string]bool{}
	for _, g := range strings.Split(group, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if g != "day" && g != "account" && g != "model" {
			return q, fmt.Errorf("group_by: unknown dimension %q (use day, account, model)", g)
		}
		if !seen[g] {
			seen[g] = true
			q.GroupBy = append(q.GroupBy, g)
		}
	}
	return q, nil
}

// wantsCSV reports whether the report is asked for as CSV: format=csv, or an Accept of text/csv.
func wantsCSV(req *http.Request, format string) bool {
	if format == "csv" {
		return true
	}
	for _, part := range strings.Split(req.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/csv" {
			return true
		}
	}
	return false
}

// writeCSV writes the grouped dimensions (in group_by order), then every field.
func writeCSV(w http.ResponseWriter, q Query, rows []Row) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	header := append(append([]string{}, q.GroupBy...), Fields[:]...)
	if cw.Write(header) != nil {
		return // the client went away
	}
	for _, row := range rows {
		line := make([]string, 0, len(header))
		for _, g := range q.GroupBy {
			switch g {
			case "day":
				line = append(line, row.Day)
			case "account":
				line = append(line, csvtext.Cell(row.Account))
			case "model":
				line = append(line, csvtext.Cell(row.Model))
			}
		}
		for _, f := range Fields {
			if f == FieldAmount {
				line = append(line, money.Format(row.Values[f]))
				continue
			}
			line = append(line, strconv.FormatInt(row.Values[f], 10))
		}
		if cw.Write(line) != nil {
			return
		}
	}
	cw.Flush()
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, err := json.Marshal(map[string]string{"error": msg})
	if err != nil {
		return
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return // the client went away
	}
}

// now is the recorder's clock; a nil recorder reads the real one.
func (r *Recorder) now() time.Time {
	if r != nil && r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
