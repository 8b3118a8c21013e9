// Package docs_test checks that each thing the documents hold has one
// home: the package map in architecture.md, the decisions in
// decisions.md, today's benchmark figures in bench/README.md, and that
// the directories swept for long lines stay swept.
package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const root = ".."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text under the heading line head up to the next heading
// of the same or a higher level.
func section(t *testing.T, doc, head string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+head+"\n")
	if i < 0 {
		t.Fatalf("no heading %q", head)
	}
	rest := doc[i+len(head)+2:]
	level := strings.Index(head, " ")
	for _, prefix := range []string{"\n# ", "\n## ", "\n### "}[:level] {
		if j := strings.Index(rest, prefix); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}

// goPackages lists the directories holding Go files, as paths relative to
// the repository, without examples/ and bench/ (the map names them as
// directories) and testdata.
func goPackages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "testdata",
				rel == "examples", rel == "bench", rel == "docs":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && rel != filepath.Base(rel) {
			seen[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}

// TestOnePackageMap: architecture.md's Packages table names every package
// of the module, and no other page keeps a table of them.
func TestOnePackageMap(t *testing.T) {
	table := section(t, read(t, "docs/architecture.md"), "## Packages")
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z0-9/]+)`").FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	pkgs := goPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk is wrong", len(pkgs))
	}
	for _, p := range pkgs {
		if !named[p] {
			t.Errorf("docs/architecture.md, Packages: no row names package %s", p)
		}
	}
	for _, doc := range []string{"README.md", "CONTRIBUTING.md"} {
		for _, line := range strings.Split(read(t, doc), "\n") {
			if strings.HasPrefix(line, "| `engine") || strings.HasPrefix(line, "| `agent") {
				t.Errorf("%s keeps a map of the packages (%q): docs/architecture.md is the one", doc, line)
			}
		}
	}
}

// TestDecisionsLiveInDecisions: architecture.md links to the decisions
// rather than listing them, and says no more what the code no longer
// does.
func TestDecisionsLiveInDecisions(t *testing.T) {
	arch := read(t, "docs/architecture.md")
	dec := read(t, "docs/decisions.md")
	room := section(t, arch, "## Decisions where the rules leave room")
	if strings.Contains(room, "\n- ") || !strings.Contains(room, "decisions.md") {
		t.Errorf("architecture.md lists decisions where the rules leave room instead of linking to decisions.md:\n%s", room)
	}
	if strings.Contains(section(t, arch, "## The sandbox"), "\n- **") {
		t.Error("architecture.md, The sandbox, lists the sandbox's choices; they belong to decisions.md, Sandbox")
	}
	// Claims the agent outgrew: it reads the host's memory pressure and
	// the clocks' jumps (agent/signals.go).
	stales := []string{
		"does not watch the host's pressure", "does not yet treat a jump of the wall clock",
		"has no source of such events", "does not yet detect a jump of the wall clock",
		"memory pressure** is not watched",
	}
	docs := map[string]string{"architecture.md": arch, "decisions.md": dec, "protocol.md": read(t, "docs/protocol.md")}
	for _, stale := range stales {
		for name, doc := range docs {
			if strings.Contains(strings.Join(strings.Fields(doc), " "), stale) {
				t.Errorf("docs/%s still says %q", name, stale)
			}
		}
	}
}

// TestCostsCiteTheirBenchRow: operating.md's costs name, for each figure,
// the bench/README.md row (or the bench/HISTORY.md runs) it comes from,
// and every link to a row of bench/README.md in docs/ finds its anchor.
func TestCostsCiteTheirBenchRow(t *testing.T) {
	costs := section(t, read(t, "docs/operating.md"), "## What it costs")
	for _, item := range strings.Split(costs, "\n- ")[1:] {
		if regexp.MustCompile(`[0-9]`).MatchString(item) &&
			!strings.Contains(item, "bench/README.md#") && !strings.Contains(item, "bench/HISTORY.md") {
			t.Errorf("docs/operating.md, What it costs: %.40q... quotes figures without their bench row", item)
		}
	}
	bench := read(t, "bench/README.md")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs: %v, %d files", err, len(docs))
	}
	link := regexp.MustCompile(`bench/README\.md#([a-z0-9-]+)`)
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(bench, `<a id="`+m[1]+`"></a>`) {
				t.Errorf("%s links to bench/README.md#%s, which has no such row", filepath.Base(path), m[1])
			}
		}
	}
}

// TestOnePlural: internal/words holds the one plural of a count's noun;
// no other package keeps its own.
func TestOnePlural(t *testing.T) {
	def := regexp.MustCompile(`(?m)^func (\([^)]*\) )?[A-Za-z]*[Pp]lural[A-Za-z]*\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			filepath.ToSlash(filepath.Dir(rel)) == "internal/words" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := def.Find(b); m != nil {
			t.Errorf("%s: %s...: use words.Plural", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	benchAt  = regexp.MustCompile(`^[0-9a-f]{7,40}, 20[0-9]{2}-[01][0-9]-[0-3][0-9]$`)
	datedHdr = regexp.MustCompile(`(?m)^## 20[0-9]{2}-[01][0-9]-[0-3][0-9]`)
)

// TestBenchTodayInOneRow: bench/README.md gives each target one short row
// (target, today's figure, commit and date, command), and the history of
// the figures is in bench/HISTORY.md, in dated sections.
func TestBenchTodayInOneRow(t *testing.T) {
	targets := section(t, read(t, "bench/README.md"), "## Targets")
	rows := 0
	for _, line := range strings.Split(targets, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| target |") {
			continue
		}
		rows++
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Errorf("bench/README.md: a row of %d cells, want target, today, at, command: %.80s", len(cells), line)
			continue
		}
		if at := strings.TrimSpace(cells[2]); !benchAt.MatchString(at) {
			t.Errorf("bench/README.md: %.60s: 'at' is %q, want a commit and a date", cells[0], at)
		}
		if n := utf8.RuneCountInString(line); n > 600 {
			t.Errorf("bench/README.md: the row %.60s is %d characters: its history belongs in bench/HISTORY.md", cells[0], n)
		}
	}
	if rows < 10 {
		t.Errorf("bench/README.md, Targets: %d rows", rows)
	}
	if n := len(datedHdr.FindAllString(read(t, "bench/HISTORY.md"), -1)); n < 3 {
		t.Errorf("bench/HISTORY.md has %d dated sections", n)
	}
}

// TestLinesFit: no Go line of the repository is over 120
// characters.
func TestLinesFit(t *testing.T) {
	check := func(path string) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Buffer(nil, 1<<20)
		for n := 1; s.Scan(); n++ {
			if w := utf8.RuneCountInString(s.Text()); w > 120 {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: %d characters, over 120", rel, n, w)
			}
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root:
			return fs.SkipDir // .git, and the CI's caches
		case !d.IsDir() && strings.HasSuffix(path, ".go"):
			check(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
