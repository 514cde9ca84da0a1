package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.",
			"Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"Incorrect API key provided: sk-abc12*****************************xyz9.", "Incorrect API key provided: [redacted]."},
		{"invalid x-api-key sk-ant-api03-AbCdEf_gh-12", "invalid x-api-key [redacted]"},
		{"API key not valid: AIzaSyA-1234567890abcdefghijklmno", "API key not valid: [redacted]"},
		{"key mg-Zx81kQ disabled", "key [redacted] disabled"},
		{"Authorization: Bearer abcdef123456", "Authorization: [redacted]"},
		{"token ab12****************cd9 refused", "token [redacted] refused"},
		{"credential AKIAIOSFODNN7EXAMPLE", "credential [redacted]"},
		// Ordinary messages stay as they are.
		{"The model `gpt-5` does not exist or you do not have access to it.", ""},
		{"task-123 of desk-top was not found; ask-me, img-1 and a **bold** word", ""},
		{"Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM)", ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := RedactSecrets(tc.in); got != want {
			t.Errorf("RedactSecrets(%q)\n = %q\nwant %q", tc.in, got, want)
		}
	}
}

func TestRedactJSON(t *testing.T) {
	clean := []byte(`{"error": {"message": "model not found", "code": 404, "n": 1.50}}`)
	if got, changed := RedactJSON(clean); changed || string(got) != string(clean) {
		t.Fatalf("a clean answer changed: %s", got)
	}
	body := []byte(`{"error":{"message":"Incorrect API key provided: sk-proj-****abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key","details":["<b>sk-live-123456</b>"],"n":1.50}}`)
	got, changed := RedactJSON(body)
	if !changed || strings.Contains(string(got), "abcd") || strings.Contains(string(got), "123456") {
		t.Fatalf("redacted = %s", got)
	}
	var v struct {
		Error struct {
			Message string          `json:"message"`
			Code    string          `json:"code"`
			Details []string        `json:"details"`
			N       json.RawMessage `json:"n"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &v); err != nil || v.Error.Message != "Incorrect API key provided: [redacted]." ||
		v.Error.Code != "invalid_api_key" || v.Error.Details[0] != "<b>[redacted]</b>" || string(v.Error.N) != "1.50" {
		t.Fatalf("redacted = %s (%v)", got, err)
	}
	for _, notOne := range []string{`{"a":"sk-proj-****abcd"} {}`, `{"a":`, `sk-proj-****abcd`} {
		if got, changed := RedactJSON([]byte(notOne)); changed || string(got) != notOne {
			t.Errorf("%s became %s", notOne, got)
		}
	}
}

func TestRefusalRedactsTheProvidersMessage(t *testing.T) {
	e := Refusal(Answer{Status: 400, Body: []byte(`{"error":{"code":"InvalidParameter","message":"key sk-proj-****abcd may not use this model"}}`)})
	if e.Status != 400 || e.Message != "key [redacted] may not use this model" {
		t.Fatalf("refusal = %d %q", e.Status, e.Message)
	}
}

// FuzzRedactJSON checks that redaction never panics and that a changed document is still one
// JSON value.
func FuzzRedactJSON(f *testing.F) {
	f.Add(`{"error":{"message":"sk-proj-****abcd"}}`)
	f.Add(`["Bearer abc.def.ghi", 1e400, {"x":"\u0073k-1234567"}]`)
	f.Fuzz(func(t *testing.T, body string) {
		got, changed := RedactJSON([]byte(body))
		if changed && !json.Valid(got) {
			t.Fatalf("%q became invalid %q", body, got)
		}
		if !changed && string(got) != body {
			t.Fatalf("%q changed to %q without saying so", body, got)
		}
	})
}

// TestRedactExactSecret: the key the gateway sent is redacted whatever it looks like, also
// when an answer spells it with JSON escapes; other text is left alone.
func TestRedactExactSecret(t *testing.T) {
	const key = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e"
	if got := RedactSecrets("key "+key+" refused", key); got != "key [redacted] refused" {
		t.Errorf("RedactSecrets = %q", got)
	}
	if got := RedactSecrets("key "+key+" refused", ""); got != "key "+key+" refused" {
		t.Errorf("an empty secret changed the text: %q", got)
	}
	body := []byte(`{"error":{"message":"key ` + strings.ReplaceAll(key, "-", `\u002d`) + ` refused"}}`)
	got, changed := RedactJSON(body, key)
	if !changed || strings.Contains(string(got), "7b4d") || !strings.Contains(string(got), Redacted) {
		t.Fatalf("RedactJSON = %s", got)
	}
	// Percent-encoded, in part or whole, in either case: a URL's decoder reads the key.
	for spelled, want := range map[string]string{
		"https://cdn/a.mp4?key=%33f2a9c1e%2D7b4d-4e2a-9c1e-7b4d4e2a9c1e&x=%41": "https://cdn/a.mp4?key=[redacted]&x=%41",
		"k=3f2a9c1e%2D7b4d%2d4e2a-9c1e-7b4d4e2a9c1%65%":                        "k=[redacted]%",
		"k=%3" + key:   "k=%3[redacted]",
		"k=%2533f2a9c": "k=%2533f2a9c",
	} {
		if got := RedactSecrets(spelled, key); got != want {
			t.Errorf("RedactSecrets(%q) = %q; want %q", spelled, got, want)
		}
	}
}
