package timeline

import (
	"bytes"
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

const tiny = `node id=n1
module
[module]
name = "db"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 5
end
behaviour db/kv ready_after_polls=1 op=start duration=1s
at 1s acquire l1 attempt=a1 cap=kv wait=10s
at 4s release l1
run 20s
`

func TestSVGShowsLanesAndStates(t *testing.T) {
	sc, err := scenario.Parse("tiny.txt", []byte(tiny))
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
