package keyadmin

import (
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// A ledger row prints amounts as decimal strings, and a note that a spreadsheet would run as a
// formula is written as text.
func TestLedgerCSVRows(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	page := LedgerPage{Account: "acme"}
	for _, e := range []storage.LedgerEntry{
		{ID: "1", Time: at, Account: "acme", Kind: storage.EntryCredit, Amount: 12_500_000, BalanceAfter: 12_500_000, Note: "=HYPERLINK(\"http://x\")"},
		{ID: "2", Time: at, Account: "acme", HoldID: "h", Kind: storage.EntrySettle, Amount: -1, BalanceAfter: 12_499_999, Charged: 4_000_001, Note: "-1 over"},
	} {
		page.Entries = append(page.Entries, entryView(e))
	}
	rows := ledgerCSV(page).rows()
	if len(rows) != 3 || rows[1][8] != "12.5" || rows[1][11] != "'=HYPERLINK(\"http://x\")" || rows[2][8] != "-0.000001" ||
		rows[2][10] != "4.000001" || rows[2][11] != "'-1 over" || rows[1][1] != "2026-01-02T03:04:05Z" || rows[1][10] != "" {
		t.Fatalf("rows = %q", rows)
	}
}
