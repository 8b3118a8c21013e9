package suggest

import "testing"

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		s    string
		cand []string
		want string
	}{
		{"runing", []string{"stopped", "running"}, "running"},
		{"stauts", []string{"status", "start"}, "status"}, // a transposition is 1 edit
		{"wiat", []string{"wait", "job"}, "wait"},
		{"zzz", []string{"name", "exec"}, ""},             // nothing close
		{"ab", []string{"op"}, ""},                        // 2 edits of a 2-letter name is anything
		{"exex", []string{"exec", "exe"}, "exec"},         // the first of equals wins
		{"status", []string{"stats", "status"}, "status"}, // exact beats near
		{"", []string{"a"}, ""},
	} {
		if got := Closest(tc.s, tc.cand); got != tc.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tc.s, tc.cand, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"runing", "running", 1},
		{"ab", "ba", 1}, {"abc", "ca", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
