package keyadmin

import (
	"context"
	"net/http"

	"github.com/mediagw/mediagw/storage"
)

// LedgerNewest answers a page of at most limit entries (1 to storage.MaxLedgerPage) of the
// account's ledger, newest first, from the entry before before ("" : the newest; otherwise the
// Next of the previous page). Errors as for Ledger.
func (h *Handler) LedgerNewest(ctx context.Context, account, before string, limit int) (LedgerPage, error) {
	if _, err := h.account(ctx, account); err != nil {
		return LedgerPage{}, err
	}
	if !entryCursor(before, 1) {
		return LedgerPage{}, fail(http.StatusBadRequest, "before must be the id of an entry (the next of the previous page)")
	}
	if limit < 1 || limit > storage.MaxLedgerPage {
		limit = storage.DefaultLedgerPage
	}
	return ledgerPageView(account)(h.Store.LedgerPageNewest(ctx, account, before, limit))
}

// ledgerPageView returns the function that turns a page the store read for account into its
// view.
func ledgerPageView(account string) func([]storage.LedgerEntry, string, error) (LedgerPage, error) {
	return func(entries []storage.LedgerEntry, next string, err error) (LedgerPage, error) {
		if err != nil {
			return LedgerPage{}, err
		}
		page := LedgerPage{Account: account, Entries: make([]EntryView, 0, len(entries)), Next: next}
		for _, e := range entries {
			page.Entries = append(page.Entries, entryView(e))
		}
		return page, nil
	}
}

// EntryOf is the view of a ledger entry, as the admin API shows it.
func EntryOf(e storage.LedgerEntry) EntryView { return entryView(e) }
