package timeline

import (
	"testing"
	"unicode/utf8"
)

// TestClip: a label is kept whole when it fits, and clipped on a rune
// boundary with a mark when not: never half a rune in the SVG.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"db/kv", 5, "db/kv"},
		{"db/kv-long", 5, "db/k…"},
		{"bäckerei", 3, "b…"}, // ä is two bytes: cut before it, not inside
	} {
		got := clip(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
