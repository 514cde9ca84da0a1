package passthrough

import "testing"

// TestMarksCachePointReadsEscapedNames: a member name spelled with JSON escapes is the name
// decoded, as Anthropic reads it; an escape elsewhere does not mark a cache point.
func TestMarksCachePointReadsEscapedNames(t *testing.T) {
	for body, want := range map[string]bool{
		`{"system":[{"type":"text","cache_control":{"type":"ephemeral"}}]}`:            true,
		`{"system":[{"type":"text","cache\u005fcontrol":{"type":"ephemeral"}}]}`:       true,
		`{"system":[{"type":"text","\u0063ache_control":{"type":"ephemeral"}}]}`:       true,
		`{"messages":[{"role":"user","content":"caf\u00e9"}]}`:                         false,
		`{"messages":[{"role":"user","content":"plain"}]}`:                             false,
		`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"\u0061"`: true, // unreadable: held at the write rate
	} {
		if got := marksCachePoint([]byte(body)); got != want {
			t.Errorf("marksCachePoint(%s) = %v, want %v", body, got, want)
		}
	}
}
