package timeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/sim/scenario"
)

// TestSVGDeterministic draws every scenario twice and wants the same SVG,
// byte for byte.
func TestSVGDeterministic(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no scenario in ../../scenarios")
	}
	for _, f := range files {
		sc, err := scenario.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		b, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(SVG(a), SVG(b)) {
			t.Errorf("%s: two SVGs differ", f)
		}
	}
}

func TestSVGShowsLanesAndStates(t *testing.T) {
	data, err := os.ReadFile("../scenario/testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("tiny.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Run()
	if err != nil {
		t.Fatal(err)
	}
	svg := string(SVG(res))
	for _, s := range []string{"<svg", "db/kv", "lease l1", ">ready<", "</svg>"} {
		if !strings.Contains(svg, s) {
			t.Errorf("SVG lacks %q", s)
		}
	}
}
