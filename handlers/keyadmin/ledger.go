package keyadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/csvtext"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// The account money routes:
//
//	POST /mediagw/accounts/{name}/credit   {"amount": "12.5", "note": "...", "adjust": false}
//	                                       with an Idempotency-Key header; answers the entry
//	                                       and the balance after it
//	GET  /mediagw/accounts/{name}/balance  the balance, what is held, and whether it is limited
//	GET  /mediagw/accounts/{name}/ledger?after=&limit=
//	                                       a page of the ledger, oldest first; JSON, or CSV with
//	                                       Accept: text/csv or ?format=csv
//
// Amounts are decimal strings of the gateway's currency with at most 6 decimals, everywhere.

// maxIdempotencyKey bounds the Idempotency-Key of a credit.
const maxIdempotencyKey = 255

// errCreditKey is the message of a credit without one good Idempotency-Key.
const errCreditKey = "a credit needs one Idempotency-Key header of 1 to 255 printable ASCII characters, so that a retry credits once"

// creditKey reports whether key is 1 to maxIdempotencyKey printable ASCII characters (the rule
// of the creates' Idempotency-Key): a tab or a byte past ASCII is not what an operator typed,
// and would be shown back differently by every tool.
func creditKey(key string) bool {
	if key == "" || len(key) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// NextHeader carries the cursor of the next ledger page of a CSV answer (the JSON answer has it
// as "next"); it is absent on the last page.
const NextHeader = "Mediagw-Ledger-Next"

// BalanceView is an account's balance as the admin API shows it.
type BalanceView struct {
	Account string `json:"account"`
	// Balance is what the account may still spend when it is limited: credits less charges and
	// open holds. Unlimited accounts are metered: their balance is minus what they spent.
	Balance string `json:"balance"`
	// Held is the sum of the open holds of requests and tasks in progress.
	Held string `json:"held"`
	// Limited is set by the account's first credit: from then on requests must fit the balance.
	Limited bool `json:"limited"`
}

// EntryView is a ledger entry as the admin API shows it.
type EntryView struct {
	ID           string `json:"id"`
	Time         string `json:"time"`
	Account      string `json:"account"`
	KeyID        string `json:"key_id,omitempty"`
	Model        string `json:"model,omitempty"`
	Ref          string `json:"ref,omitempty"`
	HoldID       string `json:"hold_id,omitempty"`
	Kind         string `json:"kind"`
	Amount       string `json:"amount"`
	BalanceAfter string `json:"balance_after"`
	Charged      string `json:"charged,omitempty"`
	Note         string `json:"note,omitempty"`
}

// CreditAnswer is the answer to a credit.
type CreditAnswer struct {
	Entry   EntryView   `json:"entry"`
	Balance BalanceView `json:"balance"`
}

// LedgerPage is a page of an account's ledger.
type LedgerPage struct {
	Account string      `json:"account"`
	Entries []EntryView `json:"entries"`
	// Next is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// ledgerCSV is a ledger page to be written as CSV.
type ledgerCSV LedgerPage

func balanceView(b storage.Balance) BalanceView {
	return BalanceView{Account: b.Account, Balance: money.Format(b.Amount), Held: money.Format(b.Held), Limited: b.Limited}
}

func entryView(e storage.LedgerEntry) EntryView {
	v := EntryView{ID: e.ID, Time: e.Time.UTC().Format(time.RFC3339Nano), Account: e.Account, KeyID: e.KeyID,
		Model: e.Model, Ref: e.Ref, HoldID: e.HoldID, Kind: e.Kind, Amount: money.Format(e.Amount),
		BalanceAfter: money.Format(e.BalanceAfter), Note: e.Note}
	if e.Kind == storage.EntrySettle {
		v.Charged = money.Format(e.Charged)
	}
	return v
}

// CreditRequest is a credit as an operator asks for it, through the admin API or the console.
type CreditRequest struct {
	// Amount is a decimal string of the gateway's currency with at most 6 decimals.
	Amount string
	Note   string
	// Adjust must be set for a negative amount, which takes money from the balance.
	Adjust bool
	// IdempotencyKey (1 to 255 printable ASCII characters, as every Idempotency-Key of the
	// gateway) makes a retry answer the first credit.
	IdempotencyKey string
}

// MaxNote is the longest note of a credit, in characters (the console's form says so too).
const MaxNote = 500

func (h *Handler) credit(r *http.Request, account string) (CreditAnswer, error) {
	if _, err := h.account(r.Context(), account); err != nil {
		return CreditAnswer{}, err
	}
	body, err := readBody(r)
	if err != nil {
		return CreditAnswer{}, err
	}
	const usage = `the body must be {"amount": "12.5", "note": "...", "adjust": false}`
	m, err := strictObject(body, "the body", "amount", "note", "adjust")
	if err != nil {
		return CreditAnswer{}, fail(http.StatusBadRequest, err.Error()+" ("+usage+")")
	}
	var req CreditRequest
	if m["note"] != nil && json.Unmarshal(m["note"], &req.Note) != nil {
		return CreditAnswer{}, fail(http.StatusBadRequest, usage+": note must be a string")
	}
	if m["adjust"] != nil && json.Unmarshal(m["adjust"], &req.Adjust) != nil {
		return CreditAnswer{}, fail(http.StatusBadRequest, usage+": adjust must be true or false")
	}
	var text string
	if err := json.Unmarshal(m["amount"], &text); m["amount"] == nil || err != nil {
		return CreditAnswer{}, fail(http.StatusBadRequest, `amount must be a decimal string such as "12.5" (at most 6 decimals), not a JSON number`)
	}
	// Two keys leave it unclear which one a retry is matched on: a proxy that puts its own first
	// would make a retry a second credit.
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) > 1 {
		return CreditAnswer{}, fail(http.StatusBadRequest, errCreditKey)
	}
	req.Amount, req.IdempotencyKey = text, r.Header.Get("Idempotency-Key")
	return h.Credit(r.Context(), account, req)
}

// Credit adds req.Amount to the account's balance (the first credit makes the account limited)
// and answers the entry and the balance after it. A retry with the same IdempotencyKey answers
// the first credit and credits nothing; another credit under a used key is a 409 *Error. Bad
// input is a 400 *Error whose message says what to change; an unknown account a 404.
func (h *Handler) Credit(ctx context.Context, account string, req CreditRequest) (CreditAnswer, error) {
	if _, err := h.account(ctx, account); err != nil {
		return CreditAnswer{}, err
	}
	key := req.IdempotencyKey
	if !creditKey(key) {
		return CreditAnswer{}, fail(http.StatusBadRequest, errCreditKey)
	}
	amount, err := money.ParseEntered(req.Amount)
	pastBound := amount < -storage.MaxAmount || amount > storage.MaxAmount
	if errors.Is(err, money.ErrRange) || err == nil && pastBound {
		return CreditAnswer{}, fail(http.StatusBadRequest, fmt.Sprintf("amount %q is past %s either way, the most one credit or balance may be; nothing was credited",
			req.Amount, money.Format(storage.MaxAmount)))
	}
	if err != nil {
		return CreditAnswer{}, fail(http.StatusBadRequest, fmt.Sprintf("amount %q is not a decimal amount such as \"12.5\": digits with at most 6 decimals, and a '-' only before an amount below zero (no '+', no \"-0\"); nothing was credited", req.Amount))
	}
	if amount < 0 && !req.Adjust {
		return CreditAnswer{}, fail(http.StatusBadRequest, `a negative amount takes money from the balance: send it with "adjust": true`)
	}
	if utf8.RuneCountInString(req.Note) > MaxNote {
		return CreditAnswer{}, fail(http.StatusBadRequest, fmt.Sprintf("note is at most %d characters; nothing was credited", MaxNote))
	}
	if !utf8.ValidString(req.Note) {
		// Redis keeps a note as JSON text, Badger as bytes: one that is not UTF-8 would read
		// back changed from one store, and its credit answer a 409 though it was made.
		return CreditAnswer{}, fail(http.StatusBadRequest, "note must be UTF-8 text; nothing was credited")
	}
	e, err := h.Store.Credit(ctx, storage.Credit{Account: account, Amount: amount, Note: req.Note, IdempotencyKey: key}, h.now())
	if errors.Is(err, storage.ErrBalanceBound) {
		return CreditAnswer{}, fail(http.StatusBadRequest, fmt.Sprintf("a credit of %s would take the balance, or the balance once its open holds are released, past %s either way, the most the ledger holds; nothing was credited",
			money.Format(amount), money.Format(storage.MaxAmount)))
	}
	if err != nil {
		return CreditAnswer{}, err
	}
	// A retry with the key answers the first credit; the key of another credit is a mistake.
	if e.Amount != amount || e.Note != req.Note {
		return CreditAnswer{}, fail(http.StatusConflict, fmt.Sprintf("Idempotency-Key %q made a credit of %s (%q) before; use a new key for another credit",
			key, money.Format(e.Amount), e.Note))
	}
	bal, err := h.Store.Balance(ctx, account)
	if err != nil {
		return CreditAnswer{}, err
	}
	return CreditAnswer{Entry: entryView(e), Balance: balanceView(bal)}, nil
}

func (h *Handler) balance(ctx context.Context, account string) (BalanceView, error) {
	if _, err := h.account(ctx, account); err != nil {
		return BalanceView{}, err
	}
	bal, err := h.Store.Balance(ctx, account)
	return balanceView(bal), err
}

func (h *Handler) ledger(r *http.Request, account string) (any, error) {
	q, err := strictQuery(r, "after", "limit", "format")
	if err != nil {
		return nil, err
	}
	limit := storage.DefaultLedgerPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > storage.MaxLedgerPage {
			return nil, fail(http.StatusBadRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", storage.MaxLedgerPage))
		}
		limit = n
	}
	page, err := h.Ledger(r.Context(), account, q.Get("after"), limit)
	if err != nil {
		return nil, err
	}
	format := q.Get("format")
	switch {
	case format == "csv" || format == "" && strings.Contains(r.Header.Get("Accept"), "text/csv"):
		return ledgerCSV(page), nil
	case format == "" || format == "json":
		return page, nil
	}
	return nil, fail(http.StatusBadRequest, "format must be json or csv")
}

// Ledger answers a page of at most limit entries (1 to storage.MaxLedgerPage) of the account's
// ledger, oldest first, from the entry after after ("" : the first page; otherwise the Next of
// the previous page). An unknown account is a 404 *Error, a bad after a 400.
func (h *Handler) Ledger(ctx context.Context, account, after string, limit int) (LedgerPage, error) {
	if _, err := h.account(ctx, account); err != nil {
		return LedgerPage{}, err
	}
	if !entryCursor(after, 0) {
		return LedgerPage{}, fail(http.StatusBadRequest, "after must be the id of an entry (the next of the previous page)")
	}
	if limit < 1 || limit > storage.MaxLedgerPage {
		limit = storage.DefaultLedgerPage
	}
	return ledgerPageView(account)(h.Store.LedgerPage(ctx, account, after, limit))
}

// entryCursor reports whether a page cursor is "" or an entry id of least: a whole number that
// both stores read (Redis's scores are int64, Badger's counter never reaches 2^63), so that a
// cursor past every entry is an empty page, not a store's error (a 500).
func entryCursor(cursor string, least int64) bool {
	if cursor == "" {
		return true
	}
	if cursor[0] < '0' || cursor[0] > '9' {
		return false // ParseInt would take a sign, which the stores do not
	}
	n, err := strconv.ParseInt(cursor, 10, 64)
	return err == nil && n >= least
}

// CSVRows is the page as the admin API's CSV ledger has it: a header row, then a row an entry,
// every text cell made safe for spreadsheets.
func (p LedgerPage) CSVRows() [][]string { return ledgerCSV(p).rows() }

// ledgerCSVHeader names the columns of the CSV ledger.
var ledgerCSVHeader = []string{"id", "time", "account", "key_id", "model", "ref", "hold_id", "kind", "amount", "balance_after", "charged", "note"}

func (p ledgerCSV) rows() [][]string {
	rows := make([][]string, 0, len(p.Entries)+1)
	rows = append(rows, ledgerCSVHeader)
	for _, e := range p.Entries {
		// Every text cell is made safe, not the note alone: account names, key ids, models and
		// refs come from operators' automation, customers' sign-ups and upstreams' answers.
		text := csvtext.Row([]string{e.Account, e.KeyID, e.Model, e.Ref, e.HoldID, e.Kind, e.Note})
		rows = append(rows, []string{e.ID, e.Time, text[0], text[1], text[2], text[3], text[4], text[5], e.Amount, e.BalanceAfter, e.Charged, text[6]})
	}
	return rows
}
