package storage

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxAccountName is the longest account name, in bytes.
const MaxAccountName = 128

// CheckAccountName refuses an account name that the gateway could not store or show safely:
// empty or only white space, longer than MaxAccountName bytes, not UTF-8, holding a control
// character (the stores end an account's index keys with a NUL; logs and CSV rows are lines) or
// a line or paragraph separator, or "." or ".." (which no path of the admin API or the console
// could name). A name must also print as itself, so that no account passes for another on a
// page, in an export or in a log: no white space at either end ("acme " is "acme" on a page) and
// no invisible formatting character (Unicode's Cf: zero-width spaces and joiners, the soft
// hyphen, the byte-order mark, and the bidirectional overrides and isolates, which show a name's
// letters in another order than they are stored). A name that is to become a new account must
// also be in Unicode's composed form (CheckNewAccountName).
// Markup and other printable text are allowed: every page and export shows a name as text.
func CheckAccountName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxAccountName || !utf8.ValidString(name) {
		return errors.New("an account name is 1 to 128 bytes of UTF-8 text")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) }) {
		return errors.New("an account name must not contain a control character or a line break")
	}
	if strings.TrimSpace(name) != name {
		return errors.New("an account name must not begin or end with white space")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
		return errors.New("an account name must not contain an invisible formatting character (zero-width, soft hyphen, byte-order mark, bidirectional control)")
	}
	if name == "." || name == ".." {
		// The admin API and the console address an account as one path segment, and HTTP
		// servers clean these two away before any route is read.
		return errors.New(`an account name must not be "." or ".."`)
	}
	return nil
}

// CheckNewAccountName is CheckAccountName for a name that is to become a new account: it must
// also be in Unicode's composed form, NFC ("e" and the combining U+0301 read exactly as the one
// character U+00E9), so that no new account reads as another. Accounts named before this rule
// (with keys or a record in the store) and the Caddyfile's names are held only to
// CheckAccountName, so that they keep working.
func CheckNewAccountName(name string) error {
	if err := CheckAccountName(name); err != nil {
		return err
	}
	if !norm.NFC.IsNormalString(name) {
		return errors.New("a new account name must be in Unicode's composed form (NFC): write " + strconv.Quote(norm.NFC.String(name)) + ", with each accented letter as one character")
	}
	return nil
}
