// Package words holds the small helpers of the messages people read:
// clipping a long value and the plural of a count. One of each, so that
// every message clips on a rune boundary and counts alike.
package words

import "unicode/utf8"

// Clip keeps at most n bytes of s's beginning, cut on a rune boundary,
// and puts mark after them when s was longer: a value quoted in a message
// stays short and valid UTF-8.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// ClipStart keeps at most n bytes of s's end, cut on a rune boundary, and
// puts mark before them when s was longer: the tail of a log, whose last
// lines tell most.
func ClipStart(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return mark + s[i:]
}

// Plural is the "s" of a count's noun: "" for 1, else "s".
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
