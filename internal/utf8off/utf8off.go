// Package utf8off finds where a text stops being UTF-8, for the errors of
// the loaders that refuse such input (op output, TOML files) with a
// position.
package utf8off

import "unicode/utf8"

// Invalid returns the offset of the first byte of b that does not start a
// valid UTF-8 sequence, or len(b) when b is valid UTF-8.
func Invalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
