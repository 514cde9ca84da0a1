package caddymodule

import (
	"strings"
	"testing"
)

// member_keys takes a budget or its older alias quota, not both, and refuses a period without an
// amount or an unknown period.
func TestConsoleMemberKeysValidate(t *testing.T) {
	quota := int64(5)
	for _, tc := range []struct {
		name    string
		keys    ConsoleMemberKeys
		wantErr string
	}{
		{"budget a day", ConsoleMemberKeys{Budget: 2_500_000, BudgetPeriod: "day", CreatesPerHour: 3}, ""},
		{"quota alone", ConsoleMemberKeys{Quota: &quota}, ""},
		{"budget and quota", ConsoleMemberKeys{Budget: 1_000_000, Quota: &quota}, "budget or quota, not both"},
		{"period without amount", ConsoleMemberKeys{BudgetPeriod: "month"}, "budget must be an amount above 0"},
		{"unknown period", ConsoleMemberKeys{Budget: 1, BudgetPeriod: "week"}, "budget must be an amount above 0"},
		{"negative creates", ConsoleMemberKeys{CreatesPerHour: -1}, "at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.keys
			h := &ConsoleHandler{Users: []ConsoleUser{{Name: "admin", PasswordHash: "x"}}, MemberKeys: &keys}
			err := h.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// A JSON config is held to the Caddyfile's rule for the playground: https, or plain http only to
// a loopback address or localhost, where a typed API key does not cross the network.
func TestConsolePlaygroundValidate(t *testing.T) {
	for url, wantErr := range map[string]string{
		"https://api.example.com":       "",
		"http://127.0.0.1:8080":         "",
		"http://[::1]:8080":             "",
		"http://[::ffff:127.0.0.1]:80":  "",
		"http://LOCALHOST:8080/":        "",
		"http://10.0.0.5:8080":          "write https://10.0.0.5:8080",
		"http://[::ffff:10.0.0.5]:8080": "write https://[::ffff:10.0.0.5]:8080",
		"http://localhost.example.com":  "write https://localhost.example.com",
		"ftp://127.0.0.1":               "not an http(s) base URL",
	} {
		h := &ConsoleHandler{Users: []ConsoleUser{{Name: "admin", PasswordHash: "x"}}, Playground: url}
		if err := h.Validate(); wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("playground %s: Validate = %v, want %q", url, err, wantErr)
		}
	}
}

// A configured user name has no colon: "key:<id>" is how a member logged in with an API key is
// named in the log and on the pages, and no configured user may look like one.
func TestConsoleUserNameHasNoColon(t *testing.T) {
	h := &ConsoleHandler{Users: []ConsoleUser{{Name: "key:key_0123456789ab", PasswordHash: "x", Account: "acme"}}}
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "must not contain a colon") {
		t.Fatalf("Validate = %v", err)
	}
}
