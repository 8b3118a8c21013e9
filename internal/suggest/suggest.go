// Package suggest finds the name someone most likely meant: the one
// "did you mean" hint of the project, for configuration keys, commands and
// flags alike.
package suggest

// Closest returns the candidate within edit distance 2 of s (and less than
// half the candidate's length, so that short names are not matched by
// anything), preferring the nearest and, among equals, the first; "" when
// none is close.
func Closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := Distance(s, c)
		if d < bestD && d*2 < len(c) {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the edit distance between a and b, in bytes: insertions,
// deletions, substitutions and transpositions of two neighbours (the
// commonest typing slip, "stauts") each count 1.
func Distance(a, b string) int {
	// Three rows: a transposition looks two rows back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
