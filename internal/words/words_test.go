package words

import "testing"

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s          string
		n          int
		head, tail string
	}{
		{"short", 5, "short", "short"},
		{"", 0, "", ""},
		{"abcdef", 3, "abc...", "...def"},
		{"abcdef", 0, "...", "..."},
		// A cut inside a rune moves to its boundary: é is 2 bytes, € 3.
		{"aébc", 2, "a...", "...bc"},
		{"€uro", 2, "...", "...ro"},
		{"€uro", 5, "€ur...", "...uro"},
		{"ab€", 4, "ab...", "...b€"},
	} {
		if got := Clip(tc.s, tc.n, "..."); got != tc.head {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.head)
		}
		if got := ClipStart(tc.s, tc.n, "..."); got != tc.tail {
			t.Errorf("ClipStart(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.tail)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "s", 1: "", 2: "s"} {
		if got := Plural(n); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
