package svcenv

import (
	"testing"
)

// BenchmarkWriteFiles is what preparing a module's data dir costs when its
// files are already written (an op after a restart) against when each must
// be replaced (a changed configuration: a temporary file, fsync, rename).
func BenchmarkWriteFiles(b *testing.B) {
	settings := map[string]any{"slots": 4.0, "name": "demo"}
	for _, bc := range []struct {
		name    string
		changed bool
	}{{"unchanged", false}, {"changed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			l := hostLayout(b, true)
			if err := WriteFiles(l, nil, Files{Settings: settings}); err != nil {
				b.Fatal(err)
			}
			i := 0.0
			for b.Loop() {
				s := settings
				if bc.changed {
					i++
					s = map[string]any{"slots": i}
				}
				if err := WriteFiles(l, nil, Files{Settings: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
