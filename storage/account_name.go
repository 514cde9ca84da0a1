package storage

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxAccountName is the longest account name, in bytes.
const MaxAccountName = 128

// CheckAccountName refuses an account name that the gateway could not store or show safely:
// empty or only white space, longer than MaxAccountName bytes, not UTF-8, or holding a control
// character (the stores end an account's index keys with a NUL; logs and CSV rows are lines), or
// "." or ".." (which no path of the admin API or the console could name).
// Markup and other printable text are allowed: every page and export shows a name as text.
func CheckAccountName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxAccountName || !utf8.ValidString(name) {
		return errors.New("an account name is 1 to 128 bytes of UTF-8 text")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) }) {
		return errors.New("an account name must not contain a control character")
	}
	if name == "." || name == ".." {
		// The admin API and the console address an account as one path segment, and HTTP
		// servers clean these two away before any route is read.
		return errors.New(`an account name must not be "." or ".."`)
	}
	return nil
}
