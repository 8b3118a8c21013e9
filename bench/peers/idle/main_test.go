//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The reports are what two runs are compared by, line by line: each case
// checks one against its expected text in testdata.
func TestReports(t *testing.T) {
	td := func(name string) string { return filepath.Join("testdata", name) }
	tests := []struct {
		name string
		run  func(*bytes.Buffer) error
		want string
	}{
		{"ops by kind: counts and wall from two scrapes, CPU from the op log", func(b *bytes.Buffer) error {
			return ops(b, td("metrics0.txt"), td("metrics1.txt"), td("opcpu.txt"), "100")
		}, "ops.want"},
		{"svcrun's CPU split by what it did", func(b *bytes.Buffer) error {
			return split(b, td("traces.txt"), "10")
		}, "split.want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.run(&b); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(td(tt.want))
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
}
