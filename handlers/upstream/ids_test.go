package upstream

import (
	"strings"
	"testing"
)

func TestUsableID(t *testing.T) {
	for id, ok := range map[string]bool{
		"cgt-20260101-abc":                true,
		"video_68a1:b.c~d":                true,
		strings.Repeat("a", MaxIDBytes):   true,
		strings.Repeat("a", MaxIDBytes+1): false,
		"":                                false,
		".":                               false,
		"..":                              false,
		"a/b":                             false,
		`a\b`:                             false,
		"a b":                             false,
		"a?b":                             false,
		"a#b":                             false,
		"a%2fb":                           false,
		"a\x00b":                          false,
		"a\nb":                            false,
		"tâche":                           false,
	} {
		if UsableID(id) != ok {
			t.Errorf("UsableID(%.40q) = %v, want %v", id, !ok, ok)
		}
	}
}
