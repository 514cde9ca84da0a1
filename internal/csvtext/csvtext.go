// Package csvtext makes the text cells of the gateway's CSV exports (the ledger, the usage
// report) safe to open in a spreadsheet, whose users double-click what an operator downloads.
package csvtext

import (
	"strings"
	"unicode"
)

// formulaStarts are the characters with which a spreadsheet may read a cell as a formula (or a
// DDE call such as =cmd|' /C calc'!A0): =, +, -, @, the tab, carriage return and line feed that
// some programs skip before one, and the full-width forms of the first four, which some
// spreadsheets fold to them.
const formulaStarts = "=+-@\t\r\n＝＋－＠"

// Cell returns s as a text cell that no spreadsheet reads as a formula: a value whose first
// character that is not a space is one of formulaStarts gets a leading apostrophe, which
// spreadsheets show as text and do not display. Other values are returned unchanged. Use it for
// every cell whose text comes from a user or the store (names, notes, ids), not for amounts and
// counts that the gateway formats, whose minus sign is a number's.
func Cell(s string) string {
	t := strings.TrimLeftFunc(s, func(r rune) bool { return r == ' ' || r != '\t' && r != '\r' && r != '\n' && unicode.IsSpace(r) })
	if t == "" {
		return s
	}
	for _, r := range formulaStarts {
		if strings.HasPrefix(t, string(r)) {
			return "'" + s
		}
	}
	return s
}

// Row applies Cell to every value of row, in place, and returns it.
func Row(row []string) []string {
	for i, v := range row {
		row[i] = Cell(v)
	}
	return row
}
