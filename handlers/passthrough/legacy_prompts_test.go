package passthrough

import "testing"

// TestLegacyCompletionHoldsEachPrompt: a legacy completion makes n completions of each of its
// prompts (prompt may be a list), so a list of 3 prompts of max_tokens 100 may be billed 300
// output tokens; its sizing holds 100 (and the omit_stream_options floor charges 100 when the
// stream reports no usage).
func TestLegacyCompletionHoldsEachPrompt(t *testing.T) {
	body := []byte(`{"model":"m","prompt":["a","b","c"],"max_tokens":100,"stream":true}`)
	ep, err := ParseEndpoint("POST", "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	var fields bodyFields
	if err := fields.read(body, refFields(ep)); err != nil {
		t.Fatal(err)
	}
	q := sizing(ep, &fields, len(body))
	if n := max(q.N, 1); n*q.MaxOutput < 300 {
		t.Fatalf("3 prompts of max_tokens 100: held for %d completions of %d tokens; want 300 output tokens", n, q.MaxOutput)
	}
}

// TestLegacyCompletionPromptsCounted: each string and each token list of a legacy completion's
// prompt list is a prompt; a string, a list of tokens and a chat's body are one.
func TestLegacyCompletionPromptsCounted(t *testing.T) {
	for _, c := range []struct {
		path, body string
		want       int64
	}{
		{"/v1/completions", `{"prompt":["a",[1,2]],"n":2}`, 4},
		{"/v1/completions", `{"prompt":[1,2,3],"n":2}`, 2},
		{"/v1/completions", `{"prompt":"a b c"}`, 0},
		{"/v1/completions", `{"prompt":["only"]}`, 0},
		{"/v1/chat/completions", `{"prompt":["a","b"],"n":2}`, 2},
	} {
		ep, err := ParseEndpoint("POST", c.path)
		if err != nil {
			t.Fatal(err)
		}
		var fields bodyFields
		if err := fields.read([]byte(c.body), refFields(ep)); err != nil {
			t.Fatal(err)
		}
		if q := sizing(ep, &fields, len(c.body)); q.N != c.want {
			t.Errorf("%s %s: N = %d, want %d", c.path, c.body, q.N, c.want)
		}
	}
}
