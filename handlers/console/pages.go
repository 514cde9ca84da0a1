package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/strictquery"
	"github.com/mediagw/mediagw/storage"
)

// page is what every template receives.
type page struct {
	Title         string
	Error, Notice string
	User          User
	CSRF          string
	Data          any
	// Now is the console's clock when the page is rendered: a key is listed as expired from its
	// expiry on, as the gateway refuses it then.
	Now time.Time
}

// parsePages parses each page template together with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"time": func(unix int64) string {
			if unix == 0 {
				return ""
			}
			return time.Unix(unix, 0).UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"expiry":  keyExpiry,
		"expired": func(expires *time.Time, now time.Time) bool { return expires != nil && !now.Before(*expires) },
		"join":    strings.Join,
		"path":    url.PathEscape, // a name as one path segment
		"add":     func(a, b int) int { return a + b },
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".html")
		if base == "layout" || base == "charts" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/charts.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %v", name, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// keyExpiry writes a key's expiry in UTC: the day alone when it is a day's start (as the
// console's form sets it), else the day and the time.
func keyExpiry(t time.Time) string {
	t = t.UTC()
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02 15:04:05 UTC")
}

// render writes a page; the page is rendered into memory first, so a template failure is a
// clean 500, never half a page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, p page) {
	p.Now = h.now()
	var buf bytes.Buffer
	if err := h.pages[name].Execute(&buf, p); err != nil {
		h.Logger.Error("rendering a console page", zap.String("page", name), zap.Error(err))
		http.Error(w, "the console could not render this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return // the client went away
	}
}

func (h *Handler) show(w http.ResponseWriter, s *session, name, title string, data any) {
	h.render(w, http.StatusOK, name, page{Title: title, User: s.user, CSRF: s.csrf(), Data: data})
}

// fail shows an error page with status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	h.render(w, status, "error", page{Title: http.StatusText(status), Error: msg, User: s.user, CSRF: s.csrf()})
}

// failErr shows err: an admin operation's own *Error with its status and message, anything
// else as a 500 that is logged.
func (h *Handler) failErr(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var e *keyadmin.Error
	if errors.As(err, &e) {
		h.fail(w, r, s, e.Status, e.Message)
		return
	}
	h.Logger.Error("console request failed", zap.String("path", r.URL.Path), zap.Error(err))
	h.fail(w, r, s, http.StatusInternalServerError, "Something went wrong; the gateway's log has the details.")
}

// notFound is the answer for anything outside the user's reach, the same as for what does not
// exist, so that a member learns nothing of other accounts.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request, s *session) {
	h.fail(w, r, s, http.StatusNotFound, "There is no such page.")
}

// sees reports whether the session may see account.
func (s *session) sees(account string) bool { return s.user.Operator() || s.user.Account == account }

// seesTask reports whether the session may see a task (or a ledger entry) of account made with
// model: an operator sees every one, a member their account's, and a member who logged in with a
// key restricted to some models only those models' (or what names none), as the gateway's API
// shows that key (auth.Identity.Sees).
func (s *session) seesTask(account, model string) bool {
	return s.user.Operator() || s.identity().Sees(account, model)
}

// modelFilter is the filter of the usage figures the session sees (usage.Query.ModelAllowed):
// nil but for a member logged in with a key restricted to some models, who sees those models'
// figures only, as the gateway's API shows that key its tasks (auth.Identity.ModelFilter).
func (s *session) modelFilter() func(model string) bool {
	if s.user.Operator() {
		return nil
	}
	return s.identity().ModelFilter()
}

// identity is the member as the gateway's API would see their key: the account and, for a key
// session, the key's models.
func (s *session) identity() auth.Identity {
	id := auth.Identity{Account: s.user.Account, KeyID: s.user.KeyID}
	if s.user.Key != nil {
		id.Models = s.user.Key.Models
	}
	return id
}

type overviewData struct {
	// Accounts are the first accounts by name (overviewAccounts of them), with their usage;
	// More is set when others follow, on the accounts page.
	Accounts []accountRow
	More     bool
	// Recent charts the gateway's metrics of the last hours, Days its usage day totals.
	Recent, Days []Chart
}

// overviewAccounts is how many accounts the overview shows with their usage.
const overviewAccounts = 20

// Charts is every chart of the page, for the script that draws them.
func (d overviewData) Charts() []Chart { return append(append([]Chart(nil), d.Recent...), d.Days...) }

type accountRow struct {
	keyadmin.AccountView
	Usage keyadmin.AccountUsage
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.user.Operator() {
		http.Redirect(w, r, "/accounts/"+url.PathEscape(s.user.Account), http.StatusSeeOther)
		return
	}
	accounts, err := h.Keys.AccountsPage(r.Context(), storage.DirectoryPage{Limit: overviewAccounts})
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	data := overviewData{More: accounts.Next != ""}
	for _, a := range accounts.Accounts {
		u, err := h.Keys.UsageOf(r.Context(), a.Name)
		if err != nil {
			h.failErr(w, r, s, err)
			return
		}
		data.Accounts = append(data.Accounts, accountRow{AccountView: a, Usage: u})
	}
	if h.Charts != nil {
		data.Recent = h.Charts.Charts()
	}
	if h.Totals != nil {
		if data.Days, err = dayCharts(r.Context(), h.Totals, "", nil, h.now()); err != nil {
			h.failErr(w, r, s, err)
			return
		}
	}
	h.show(w, s, "overview", "Overview", data)
}

type accountsData struct {
	Accounts []keyadmin.AccountView
	Pages    pager
}

// accounts lists a page of accounts, by name.
func (h *Handler) accounts(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.user.Operator() {
		http.Redirect(w, r, "/accounts/"+url.PathEscape(s.user.Account), http.StatusSeeOther)
		return
	}
	q := listQuery(r)
	p, err := h.Keys.AccountsPage(r.Context(), q)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.show(w, s, "accounts", "Accounts", accountsData{Accounts: p.Accounts, Pages: makePager("/accounts", nil, q, p.Prev, p.Next)})
}

type accountData struct {
	Account keyadmin.AccountView
	Usage   keyadmin.AccountUsage
	// Keys are the account's first keys; MoreKeys is set when others follow, on the keys page.
	Keys     []keyadmin.KeyView
	MoreKeys bool
	Money    moneyData
	// Days charts the account's requests and spend per day (nil without usage totals).
	Days []Chart
	// Models are the models of the key a member logged in with, when it is restricted to some:
	// Usage and Days then count those models only (over the last chartDays days), or, without
	// usage totals to split them, Usage is the account's and Split is false.
	Models []string
	Split  bool
	// UsageDays is the days Usage counts when it is split by model.
	UsageDays int
}

func (h *Handler) account(w http.ResponseWriter, r *http.Request, s *session, name string) {
	if !s.sees(name) {
		h.notFound(w, r, s)
		return
	}
	a, err := h.Keys.Account(r.Context(), name)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	a.WebhookSecret = "" // shown by the admin API only
	u, err := h.Keys.AccountUsage(r.Context(), name)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	keys, err := h.Keys.KeysPage(r.Context(), storage.DirectoryPage{Account: name, Limit: listPageSize})
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	money, err := h.accountMoney(r, s, name, r.URL.Query().Get("before"))
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	d := accountData{Account: a, Usage: u, Keys: keys.Keys, MoreKeys: keys.Next != "", Money: money}
	filter := s.modelFilter()
	if filter != nil {
		d.Models = s.user.Key.Models
	}
	if h.Totals != nil {
		if d.Days, err = dayCharts(r.Context(), h.Totals, name, filter, h.now()); err != nil {
			h.failErr(w, r, s, err)
			return
		}
		if filter != nil {
			// The all-time totals are the account's counters, which know no model: a member
			// who may see some models gets those models' figures from the day totals.
			if d.Usage, err = dayTotals(r.Context(), h.Totals, name, filter, h.now()); err != nil {
				h.failErr(w, r, s, err)
				return
			}
			d.Split, d.UsageDays = true, chartDays
		}
	}
	h.show(w, s, "account", "Account "+name, d)
}

func (h *Handler) setDisabled(w http.ResponseWriter, r *http.Request, s *session, name string, disabled bool) {
	if !s.user.Operator() {
		h.notFound(w, r, s)
		return
	}
	if _, err := h.Keys.SetAccountDisabled(r.Context(), name, disabled); err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.audit(s, map[bool]string{true: "disable account", false: "enable account"}[disabled], name)
	http.Redirect(w, r, "/accounts/"+url.PathEscape(name), http.StatusSeeOther)
}

// usageCSV exports the usage report as CSV; a member's export is confined to their account.
func (h *Handler) usageCSV(w http.ResponseWriter, r *http.Request, s *session) {
	if h.Usage == nil {
		h.notFound(w, r, s)
		return
	}
	// Read as the admin API's report reads it: a query that does not decode, or a parameter
	// given twice, is refused, never taken as none (every account's usage).
	q, err := strictquery.Read(r.URL.RawQuery, "account", "from", "to", "group_by", "format")
	if err != nil {
		h.fail(w, r, s, http.StatusBadRequest, "The usage export cannot be made: "+err.Error()+".")
		return
	}
	if !s.user.Operator() {
		q.Set("account", s.user.Account)
	}
	q.Set("format", "csv")
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	r2.Method = http.MethodGet // a HEAD too: the server sends no body for it
	// Bad input is refused here, as a console page: the report's own answer is a JSON error,
	// which would download as the CSV file.
	if _, err := usage.ParseQuery(r2, h.now()); err != nil {
		h.fail(w, r, s, http.StatusBadRequest, "The usage export cannot be made: "+err.Error()+".")
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="mediagw-usage.csv"`)
	h.Usage.ServeReportOf(w, r2, s.modelFilter())
}
