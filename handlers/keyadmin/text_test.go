package keyadmin

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"account":"acme"}`, true},
		{`{"note":"caf\u00e9 \ud83d\ude00 \\ud800 \" \\"}`, true}, // a pair, and an escaped backslash before "ud800"
		{"{\"note\":\"caf\u00e9 \U0001F600\"}", true},
		{`{"note":"\uFFFD"}`, true}, // U+FFFD written by the client is text
		{"{\"account\":\"acme\xff\"}", false},
		{`{"account":"acme\ud800"}`, false},
		{`{"account":"acme\udc00"}`, false},
		{`{"account":"\ud800\ud800"}`, false},
		{`{"account":"\ud800x"}`, false},
		{`{"account":"\\\ud800"}`, false},
	} {
		if err := checkText([]byte(c.body)); (err == nil) != c.ok {
			t.Errorf("checkText(%q) = %v, want ok %v", c.body, err, c.ok)
		}
	}
}

// What checkText lets through, encoding/json reads without making a U+FFFD of its own.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`"a\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\\ud800"`, `"\uFFFD"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var s string
		if checkText([]byte(body)) != nil || json.Unmarshal([]byte(body), &s) != nil {
			return
		}
		if strings.Count(s, "\uFFFD") > strings.Count(body, "\uFFFD")+strings.Count(strings.ToLower(body), `\ufffd`) || !utf8.ValidString(s) {
			t.Errorf("checkText let %q through, read as %q", body, s)
		}
	})
}
