package bounded

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Text keeps a text within its bound, whole characters only, marked as cut.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"aééééé", 8, "aéé…"},           // 1+2+2 bytes and the 3 of the ellipsis
		{"a日本語です", 9, "a日…"},            // 1+3 bytes; 本 would pass the 6 left beside the ellipsis
		{"日本語です", 9, "日本…"},             // 3+3+3
		{"\xff\xfe\xfdabc", 4, "\xff…"}, // invalid bytes are each their own start
	} {
		got := Text(tc.s, tc.limit)
		if got != tc.want || len(got) > tc.limit {
			t.Errorf("Text(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
	long := strings.Repeat("é", 1<<20)
	if got := Text(long, 4096); len(got) > 4096 || !utf8.ValidString(got) {
		t.Fatalf("cut to %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
