package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// MaxUnreadURLs bounds the URLs that the unread fields of one request body may hold. Each is
// parsed and checked; a real request holds none or a few.
const MaxUnreadURLs = 64

// Unread checks the fields of a request body that the gateway forwards to the provider without
// reading them: fields it does not know, and known fields whose contents it passes on as given
// (the items of a task's tools). A provider may read any of them as the address of something to
// fetch, so every string in them, at any depth of their objects and arrays, that looks like a URL
// (LooksLikeURL) must pass CheckMediaURL: a public http(s) URL without credentials or a
// signature. Inline data (data:), files (file:) and every other scheme are refused there. Other
// strings, numbers and keys are not checked: a field that the gateway reads as free text, such
// as a prompt, is not an unread field, and a string that only mentions a URL after other text
// does not look like one.
//
// One Unread serves one request body; its zero value is ready to use.
type Unread struct {
	urls int
}

// FieldError is a refused value of an unread field, at Param (for example
// "content[0].image_url.src" or "extra[2]").
type FieldError struct {
	Param string
	Err   error
}

func (e *FieldError) Error() string { return e.Param + " " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// Check checks the JSON value of the unread field at param. A refused string, more than
// MaxUnreadURLs URLs in the body, or a value nested deeper than jsonkeys.MaxWalkDepth is a
// *FieldError; value must be valid JSON.
func (u *Unread) Check(value json.RawMessage, param string) error {
	base := &jsonkeys.Path{Key: param, Index: -1}
	err := jsonkeys.Strings(value, base, func(path *jsonkeys.Path, raw []byte) error {
		if !MayBeURL(raw[1 : len(raw)-1]) {
			return nil
		}
		s, err := decodeString(raw)
		if err != nil {
			return &FieldError{Param: path.String(), Err: errors.New("is not a readable JSON string")}
		}
		if !LooksLikeURL(s) {
			return nil
		}
		if u.urls++; u.urls > MaxUnreadURLs {
			return &FieldError{Param: path.String(), Err: fmt.Errorf("is one URL too many: fields the gateway forwards unread may hold at most %d URLs", MaxUnreadURLs)}
		}
		if strings.ContainsFunc(s, hidden) || strings.TrimLeftFunc(s, unicode.IsSpace) != s {
			return &FieldError{Param: path.String(), Err: errors.New("looks like a URL with spaces, control or invisible characters: write it plainly, as a public http(s) URL")}
		}
		if err := CheckMediaURL(s); err != nil {
			return &FieldError{Param: path.String(), Err: fmt.Errorf("looks like a URL the provider may fetch, so it %w", err)}
		}
		return nil
	})
	if errors.Is(err, jsonkeys.ErrTooDeep) || errors.Is(err, jsonkeys.ErrNotObject) {
		return &FieldError{Param: param, Err: fmt.Errorf("is nested too deeply or is not valid JSON (at most %d levels)", jsonkeys.MaxWalkDepth)}
	}
	return err
}

// decodeString decodes a raw JSON string; bytes that are not UTF-8 become U+FFFD.
func decodeString(raw []byte) (string, error) {
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// bareSchemes are schemes that URL readers take without the "//" after the colon
// ("http:10.0.0.1" is read as http://10.0.0.1/ by browsers' parser), or that name data or
// storage rather than a host.
var bareSchemes = []string{"http", "https", "ftp", "ws", "wss", "file", "data", "blob", "gs", "s3", "jar", "gopher"}

// LooksLikeURL reports whether s would be read as a URL. The test is made on s with its leading
// spaces and control characters removed, and with every control character, invisible formatting
// character (such as a zero-width space) and U+FFFD (what decoders put for bytes that are not
// UTF-8) removed from the rest, since URL readers drop tabs and line breaks and decoders drop bad
// bytes; letters are compared in any case. s looks like a URL when that text begins with "//" or
// a backslash variant of it (a reference to another host with the current scheme), or with a
// scheme (a letter, then letters, digits, "+", "-" or ".", two characters at least, so that a
// Windows drive letter is not one) and a colon that is followed by "/" or "\", or with one of the
// schemes that are read without slashes: http:, https:, ftp:, ws:, wss:, file:, data:, blob:,
// gs:, s3:, jar:, gopher:. So "https://example.com/a.png", " HTTP:\\10.0.0.1", "data:image/png;…",
// "s3://bucket/key" and "gs:bucket/key" look like URLs, and "see https://example.com",
// "user:1234", "16:9" and "C:\photo.png" do not. So does a host reference without a scheme
// ("127.0.0.1/x.png", "localhost:8080/x.png", see looksLikeHostReference), which fetchers read as
// an http URL.
func LooksLikeURL(s string) bool {
	if !MayBeURL(s) {
		return false
	}
	v := visible(strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || hidden(r) }))
	if len(v) >= 2 && isSlash(v[0]) && isSlash(v[1]) {
		return true
	}
	if scheme, rest, ok := strings.Cut(v, ":"); ok && len(scheme) >= 2 && isScheme(scheme) &&
		(rest != "" && isSlash(rest[0]) || slices.Contains(bareSchemes, strings.ToLower(scheme))) {
		return true
	}
	return looksLikeHostReference(v)
}

// looksLikeHostReference reports whether s begins with a host and goes on with a port or a
// path, without a scheme: "127.0.0.1/x.png", "localhost:8080/x.png", "10.0.0.7:80",
// "[::1]/a.png", "cdn.example.com/a.png". Fetchers that take such a string prepend http:// to
// it. A host is a name with a dot (an IPv4 address included), localhost, or an IPv6 literal in
// brackets; a port is digits. So "16:9", "2024/01/01", "models/gemini-1.5-pro", "gpt-4.1:latest"
// and a host alone ("example.com", "photo.png") are not host references.
func looksLikeHostReference(s string) bool {
	end := strings.IndexAny(s, "/\\?#")
	authority, rest := s, ""
	if end >= 0 {
		authority, rest = s[:end], s[end:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:] // user information
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		i := strings.IndexByte(authority, ']')
		if i < 0 {
			return false
		}
		host, port = authority[:i+1], authority[i+1:]
		if port != "" && port[0] != ':' {
			return false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, port = authority[:i], authority[i+1:]
		if port == "" {
			return false
		}
	}
	for i := range len(port) {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	if port == "" && (rest == "" || !isSlash(rest[0])) {
		return false // a host alone, or a host followed by a query
	}
	return strings.HasPrefix(host, "[") || strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") || isDottedHost(host)
}

// isDottedHost reports whether host is a name with a dot between two labels, of letters,
// digits, '-', '_' and characters that are not ASCII (international names, full-width digits).
func isDottedHost(host string) bool {
	dot := strings.IndexByte(strings.Trim(host, "."), '.')
	if dot <= 0 {
		return false
	}
	for _, r := range host {
		if r < utf8.RuneSelf && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// MayBeURL is a quick test that lets most plain text through unread: a URL holds a colon or a
// slash (a host reference: "127.0.0.1/x.png"), possibly after spaces, control or other
// characters that are not ASCII.
// s is the text of a string, decoded or still JSON-escaped (an escape may hide a colon).
func MayBeURL[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := range len(s) {
		if s[i] == ':' || s[i] == '\\' || s[i] == '/' {
			return true
		}
	}
	return isSlash(s[0]) || s[0] <= ' ' || s[0] >= utf8.RuneSelf
}

// visible is s without control characters, invisible formatting characters and U+FFFD.
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if hidden(r) {
			return -1
		}
		return r
	}, s)
}

func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

func isScheme(s string) bool {
	for i, c := range []byte(s) {
		letter := c|0x20 >= 'a' && c|0x20 <= 'z'
		if i == 0 && !letter || !letter && !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
