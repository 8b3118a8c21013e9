package cli

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		rest    []string
		rewrite bool
		job     string
	}{
		{[]string{"DIR", "-rewrite"}, []string{"DIR"}, true, ""},
		{[]string{"-rewrite", "DIR"}, []string{"DIR"}, true, ""},
		{[]string{"a", "--", "-rewrite", "b"}, []string{"a", "-rewrite", "b"}, false, ""},
		{[]string{"--", "-job", "x"}, []string{"-job", "x"}, false, ""},
		{[]string{"-job", "--", "a", "-rewrite"}, []string{"a"}, true, "--"}, // "--" as a value is no terminator
		{[]string{"-job=x", "a"}, []string{"a"}, false, "x"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rewrite := fs.Bool("rewrite", false, "")
		job := fs.String("job", "", "")
		rest, err := Parse(fs, tc.args)
		if err != nil || !slices.Equal(rest, tc.rest) || *rewrite != tc.rewrite || *job != tc.job {
			t.Errorf("Parse(%q) = %q, %v; rewrite %v, job %q; want %q, rewrite %v, job %q",
				tc.args, rest, err, *rewrite, *job, tc.rest, tc.rewrite, tc.job)
		}
	}
}
