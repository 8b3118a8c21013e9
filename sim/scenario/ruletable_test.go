package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The rule table of scenarios/README.md ("Rules and files") ties every rule
// of the engine, as the documentation states it, to the engine files that
// hold it and the scenarios that show it. A rule is identified by its mark,
// an HTML anchor `<a id="rule-NAME"></a>` before its sentence in
// docs/protocol.md or docs/decisions.md: invisible on the rendered page, so
// the user's documentation stays prose, and linkable, so the table's rows
// point at it. The table is checked against the documents themselves, not
// against a list kept here, so that a rule written without a scenario fails.

var (
	ruleMark = regexp.MustCompile(`<a id="(rule-[a-z0-9-]+)"></a>`)
	// A row's link to a mark: [text](../docs/DOC.md#rule-NAME).
	ruleLink = regexp.MustCompile(`\]\(\.\./docs/([a-z]+\.md)#(rule-[a-z0-9-]+)\)`)
	backtick = regexp.MustCompile("`([^`]+)`")
)

// ruleDocs are the documents whose marks the table must cover.
var ruleDocs = []string{"protocol.md", "decisions.md"}

const ruleTableHeader = "| rule | engine/ | scenarios |"

// checkRuleTable checks the table in readme against the marks of docs
// (document name to text), the files of engine/ and the scenario files.
// It returns every problem, not only the first, so that one run lists all
// the rows to fix.
func checkRuleTable(readme string, docs map[string]string, engineFiles, scenarioFiles []string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	marks := map[string]string{} // doc#id -> where, for duplicates
	var markOrder []string
	for _, d := range ruleDocs {
		for _, m := range ruleMark.FindAllStringSubmatch(docs[d], -1) {
			key := d + "#" + m[1]
			if _, dup := marks[key]; dup {
				bad("docs/%s: mark %s twice: a mark names one rule", d, m[1])
				continue
			}
			marks[key] = d
			markOrder = append(markOrder, key)
		}
	}
	if len(marks) == 0 {
		bad("no rule mark (<a id=\"rule-NAME\"></a>) in docs/%s", strings.Join(ruleDocs, ", docs/"))
	}

	rows, err := ruleTableRows(readme)
	if err != nil {
		return append(errs, err.Error())
	}
	covered := map[string]bool{}
	shown := map[string]bool{}
	for _, r := range rows {
		cells := strings.Split(strings.Trim(r.text, "|"), "|")
		if len(cells) != 3 {
			bad("scenarios/README.md:%d: %d cells, want 3 (rule | engine/ | scenarios): %s", r.line, len(cells), r.text)
			continue
		}
		links := ruleLink.FindAllStringSubmatch(cells[0], -1)
		if len(links) == 0 {
			bad("scenarios/README.md:%d: the rule names no mark ([name](../docs/protocol.md#rule-NAME))", r.line)
		}
		for _, l := range links {
			key := l[1] + "#" + l[2]
			if _, ok := marks[key]; !ok {
				bad("scenarios/README.md:%d: docs/%s has no mark %s", r.line, l[1], l[2])
			}
			covered[key] = true
		}
		eng := backtick.FindAllStringSubmatch(cells[1], -1)
		if len(eng) == 0 {
			bad("scenarios/README.md:%d: no engine file", r.line)
		}
		for _, f := range eng {
			if !slices.Contains(engineFiles, f[1]) {
				bad("scenarios/README.md:%d: no engine file engine/%s (the rule's code, not a test)", r.line, f[1])
			}
		}
		scs := backtick.FindAllStringSubmatch(cells[2], -1)
		if len(scs) == 0 {
			bad("scenarios/README.md:%d: no scenario: every rule is played by one", r.line)
		}
		for _, s := range scs {
			if !slices.Contains(scenarioFiles, s[1]) {
				bad("scenarios/README.md:%d: no scenario scenarios/%s", r.line, s[1])
			}
			shown[s[1]] = true
		}
	}
	for _, k := range markOrder {
		if !covered[k] {
			d, id, _ := strings.Cut(k, "#")
			bad("docs/%s: the rule marked %s has no row in the table of scenarios/README.md (its engine file and "+
				"scenario)", d, id)
		}
	}
	for _, f := range scenarioFiles {
		if !shown[f] {
			bad("scenarios/%s is in no row of the table of scenarios/README.md: which rule does it show?", f)
		}
	}
	return errs
}

type tableRow struct {
	line int
	text string
}

// ruleTableRows are the rows of the table of the section "Rules and
// files", after its header and separator lines.
func ruleTableRows(readme string) ([]tableRow, error) {
	lines := strings.Split(readme, "\n")
	start := slices.Index(lines, "## Rules and files")
	if start < 0 {
		return nil, fmt.Errorf("scenarios/README.md: no section \"## Rules and files\"")
	}
	var rows []tableRow
	header := false
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == ruleTableHeader:
			header = true
		case !header || !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---"):
		default:
			rows = append(rows, tableRow{line: i + 1, text: l})
		}
	}
	if !header {
		return nil, fmt.Errorf("scenarios/README.md: no table %q under \"## Rules and files\"", ruleTableHeader)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("scenarios/README.md: the rule table has no row")
	}
	return rows, nil
}

// TestRuleTable: every rule marked in docs/protocol.md and docs/decisions.md
// has a row, every row names marks, engine files and scenarios that exist,
// and every scenario is in a row.
func TestRuleTable(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "scenarios", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, d := range ruleDocs {
		b, err := os.ReadFile(filepath.Join(root, "docs", d))
		if err != nil {
			t.Fatal(err)
		}
		docs[d] = string(b)
	}
	engineFiles := baseNames(t, filepath.Join(root, "engine", "*.go"))
	engineFiles = slices.DeleteFunc(engineFiles, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	scenarioFiles := baseNames(t, filepath.Join(root, "scenarios", "*.txt"))
	for _, e := range checkRuleTable(string(readme), docs, engineFiles, scenarioFiles) {
		t.Error(e)
	}
}

func baseNames(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no file (%v)", pattern, err)
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// TestRuleTableCatches: the check fails on each kind of broken table, so
// that TestRuleTable passing means something.
func TestRuleTableCatches(t *testing.T) {
	docs := map[string]string{
		"protocol.md":  `<a id="rule-a"></a>A rule. <a id="rule-b"></a>Another.`,
		"decisions.md": `<a id="rule-c"></a>A choice.`,
	}
	engine := []string{"service.go", "lease.go"}
	scenarios := []string{"a.txt", "b.txt", "c.txt"}
	table := func(rows ...string) string {
		return "# x\n\n## Rules and files\n\n" + ruleTableHeader + "\n|---|---|---|\n" + strings.Join(rows,
			"\n") + "\n\n## Next\n| not | the | table |\n"
	}
	good := []string{
		"| [a](../docs/protocol.md#rule-a): it | `service.go` | `a.txt` |",
		"| [b](../docs/protocol.md#rule-b), [c](../docs/decisions.md#rule-c): they | `service.go`, `lease.go` | " +
			"`b.txt`, `c.txt` |",
	}
	if errs := checkRuleTable(table(good...), docs, engine, scenarios); len(errs) > 0 {
		t.Fatalf("a good table fails: %q", errs)
	}
	for _, c := range []struct {
		name string
		rows []string
		docs map[string]string
		want string
	}{
		{"a mark without a row", good[:1], nil, "rule-b has no row"},
		{"a row without a scenario", append(good, "| [a](../docs/protocol.md#rule-a): it | `service.go` | |"), nil,
			"no scenario: every rule"},
		{"a scenario that does not exist",
			append(good, "| [a](../docs/protocol.md#rule-a): it | `service.go` | `gone.txt` |"), nil,
			"no scenario scenarios/gone.txt"},
		{"an engine file that does not exist",
			append(good, "| [a](../docs/protocol.md#rule-a): it | `gone.go` | `a.txt` |"), nil, "no engine file engine/gone.go"},
		{"a row without an engine file", append(good, "| [a](../docs/protocol.md#rule-a): it | | `a.txt` |"), nil,
			"no engine file"},
		{"a mark that does not exist",
			append(good, "| [z](../docs/protocol.md#rule-z): it | `service.go` | `a.txt` |"), nil,
			"docs/protocol.md has no mark rule-z"},
		{"a mark in the other document",
			append(good, "| [c](../docs/protocol.md#rule-c): it | `service.go` | `a.txt` |"), nil,
			"docs/protocol.md has no mark rule-c"},
		{"a row naming no mark", append(good, "| it | `service.go` | `a.txt` |"), nil, "names no mark"},
		{"a scenario in no row",
			[]string{good[0], "| [b](../docs/protocol.md#rule-b), [c](../docs/decisions.md#rule-c): they | " +
				"`lease.go` | `b.txt` |"}, nil, "scenarios/c.txt is in no row"},
		{"a mark twice", good,
			map[string]string{"protocol.md": docs["protocol.md"] + `<a id="rule-a"></a>`,
				"decisions.md": docs["decisions.md"]}, "mark rule-a twice"},
		{"a row of two cells", append(good, "| [a](../docs/protocol.md#rule-a): it | `a.txt` |"), nil, "2 cells, want 3"},
	} {
		d := docs
		if c.docs != nil {
			d = c.docs
		}
		errs := checkRuleTable(table(c.rows...), d, engine, scenarios)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, c.want) }) {
			t.Errorf("%s: want an error with %q, got %q", c.name, c.want, errs)
		}
	}
}
