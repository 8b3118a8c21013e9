package utf8off

import "testing"

func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"é ok", 5},
		{"ab\xffcd", 2},
		{"\xe2\x82", 0},       // a sequence cut short
		{"ok\xed\xa0\x80", 2}, // a surrogate half
		{"\U0001F600", 4},
	} {
		if got := Invalid([]byte(tc.in)); got != tc.want {
			t.Errorf("Invalid(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
