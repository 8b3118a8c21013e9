package scenario

import (
	"fmt"
	"strings"
)

// unifiedDiff compares two texts line by line and renders the differences
// in the unified style: hunks with context lines around them, "-" for lines
// only in a, "+" for lines only in b. At most maxLines lines of hunks are
// shown (0: all); the rest is counted. It returns "" when a equals b.
func unifiedDiff(a, b, nameA, nameB string, context, maxLines int) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	shown, hidden := 0, 0
	// Walk the edit script and cut it into hunks.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		// Extend the hunk while changes are within 2*context of each other.
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(end+context+1, len(ops))
		aStart, bStart := ops[start].ai, ops[start].bi
		aCount, bCount := 0, 0
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				aCount++
			}
			if o.kind != '-' {
				bCount++
			}
		}
		hunk := []string{fmt.Sprintf("@@ -%d,%d +%d,%d @@", aStart+1, aCount, bStart+1, bCount)}
		for _, o := range ops[start:stop] {
			hunk = append(hunk, string(o.kind)+o.text)
		}
		for _, l := range hunk {
			if maxLines > 0 && shown >= maxLines {
				hidden++
				continue
			}
			out.WriteString(l)
			out.WriteByte('\n')
			shown++
		}
		i = stop
	}
	if hidden > 0 {
		fmt.Fprintf(&out, "... %d more diff line(s)\n", hidden)
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = l[:len(l)-1]
		} else {
			lines[i] = l + " (no newline at the end)"
		}
	}
	return lines
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int // line indexes in a and b where this op stands
}

// diffLines is a longest-common-subsequence diff. Traces are short (at most
// a few thousand lines), so the quadratic table is fine; common prefixes and
// suffixes are trimmed first.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	n, m := len(ma), len(mb)
	if n*m > 16_000_000 {
		// Too big for the table: show the middle as replaced whole.
		for i, l := range ma {
			ops = append(ops, diffOp{'-', l, pre + i, pre})
		}
		for j, l := range mb {
			ops = append(ops, diffOp{'+', l, pre + n, pre + j})
		}
	} else {
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i], pre + i, pre + j})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}
