package console

import (
	"crypto/rand"
	"encoding/csv"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// ledgerPageSize is the number of ledger entries on the account page, newest first; the page
// links the older ones through the ledger's cursor, so no page reads the whole ledger.
const ledgerPageSize = 50

// moneyData is the money part of the account page.
type moneyData struct {
	Balance keyadmin.BalanceView
	// Spent is what an unlimited account spent (its balance is minus that), as a decimal string.
	Spent  string
	Ledger keyadmin.LedgerPage
	// Before is the cursor this page of the ledger starts before ("" for the newest entries);
	// Newer is the cursor of the page of newer entries, the one before this ("" when that is the
	// newest page, or when this is).
	Before, Newer string
	// CreditKey is the Idempotency-Key of the credit form as this render made it: a double
	// submit or a reload of the form credits once.
	CreditKey string
}

// accountMoney reads the account's balance and the page of its ledger before before, newest
// first.
func (h *Handler) accountMoney(r *http.Request, s *session, name, before string) (moneyData, error) {
	bal, err := h.Keys.Balance(r.Context(), name)
	if err != nil {
		return moneyData{}, err
	}
	ledger, err := h.Keys.LedgerNewest(r.Context(), name, before, ledgerPageSize)
	if err != nil {
		return moneyData{}, err
	}
	hideTaskRefs(s, name, ledger.Entries)
	d := moneyData{Balance: bal, Ledger: ledger, Before: before}
	if before != "" && len(ledger.Entries) > 0 {
		if d.Newer, err = h.newerLedgerPage(r, name, ledger.Entries[0].ID); err != nil {
			return moneyData{}, err
		}
	}
	if !bal.Limited {
		spent, err := money.Parse(bal.Balance) // the admin API's own decimal: exact
		if err != nil {
			return moneyData{}, err
		}
		d.Spent = money.Format(-spent)
	}
	if s.user.Operator() {
		d.CreditKey = "console-" + rand.Text()
	}
	return d, nil
}

// hideTaskRefs takes the task's ref and hold id off the entries of models the session may not
// see tasks of (a key restricted to some models): their amounts stay, as the balance is the
// account's.
func hideTaskRefs(s *session, account string, entries []keyadmin.EntryView) {
	for i, e := range entries {
		if !s.seesTask(account, e.Model) {
			entries[i].Ref, entries[i].HoldID = "", ""
		}
	}
}

// ledgerCSV downloads the account's whole ledger as CSV, oldest first, in the admin API's
// columns (GET /mediagw/accounts/{name}/ledger?format=csv), for its member as for an operator.
// It reads and writes storage.MaxLedgerPage entries at a time, so it holds one page in memory
// however long the ledger is.
func (h *Handler) ledgerCSV(w http.ResponseWriter, r *http.Request, s *session, name string) {
	if !s.sees(name) {
		h.notFound(w, r, s)
		return
	}
	page, err := h.Keys.Ledger(r.Context(), name, "", storage.MaxLedgerPage)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="mediagw-ledger.csv"`)
	out := csv.NewWriter(w)
	for first := true; ; first = false {
		hideTaskRefs(s, name, page.Entries)
		rows := page.CSVRows()
		if !first {
			rows = rows[1:] // the header, once
		}
		if out.WriteAll(rows) != nil || page.Next == "" || len(page.Entries) == 0 {
			return // done, or the client went away
		}
		if page, err = h.Keys.Ledger(r.Context(), name, page.Next, storage.MaxLedgerPage); err != nil {
			// The status is sent: the file ends short, and the log says why.
			h.Logger.Error("reading the ledger for a console CSV", zap.String("account", name), zap.Error(err))
			return
		}
	}
}

// newerLedgerPage returns the cursor of the ledger page of the ledgerPageSize entries after the
// entry first (the newest of the page shown), newest first: the id after the newest of them, or
// "" when fewer follow first, so that the newest page is the one to link.
func (h *Handler) newerLedgerPage(r *http.Request, name, first string) (string, error) {
	newer, err := h.Keys.Ledger(r.Context(), name, first, ledgerPageSize)
	if err != nil || len(newer.Entries) < ledgerPageSize {
		return "", err
	}
	last, err := strconv.ParseInt(newer.Entries[len(newer.Entries)-1].ID, 10, 64)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(last+1, 10), nil
}

// credit credits an account from the account page's form (operators only): amount (written as
// the admin API takes it: -?digits(.digits{1,6})?, no spaces, no '+', no "-0"), note, adjust
// (required for a negative amount) and the form's idempotency key. It goes through the admin
// API's own credit.
func (h *Handler) credit(w http.ResponseWriter, r *http.Request, s *session, name string) {
	if !s.user.Operator() {
		h.notFound(w, r, s)
		return
	}
	key := r.PostFormValue("idempotency_key")
	if key == "" {
		h.fail(w, r, s, http.StatusBadRequest, "This credit form has no credit token. Reload the account page and try again.")
		return
	}
	// The amount is the admin API's and the CLI's, as typed: money.ParseEntered reads it, here
	// only for the sign; an amount it refuses is refused by the API's own credit below, in its
	// words.
	amount := r.PostFormValue("amount")
	adjust := r.PostFormValue("adjust") == "on"
	if micros, err := money.ParseEntered(amount); err == nil && micros < 0 && !adjust {
		h.fail(w, r, s, http.StatusBadRequest, "A negative amount takes money from the balance: tick \"Adjustment\" to confirm it.")
		return
	}
	answer, err := h.Keys.Credit(r.Context(), name, keyadmin.CreditRequest{Amount: amount,
		Note: strings.TrimSpace(r.PostFormValue("note")), Adjust: adjust, IdempotencyKey: key})
	var used *keyadmin.Error
	if errors.As(err, &used) && used.Status == http.StatusConflict {
		// The form went back and was sent again with another amount or note.
		h.fail(w, r, s, http.StatusConflict, "This form made another credit before and credits only once. Reload the account page for a new credit.")
		return
	}
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.audit(s, "credit account", name+": "+answer.Entry.Amount+" (entry "+answer.Entry.ID+", balance "+answer.Balance.Balance+")")
	http.Redirect(w, r, "/accounts/"+url.PathEscape(name), http.StatusSeeOther)
}
