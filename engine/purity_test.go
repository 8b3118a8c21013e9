package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The engine decides and the shell does the I/O (docs/decisions.md,
// Architecture): its non-test files import nothing that reaches the OS,
// never read the clock, sleep or arm a runtime timer, and start no
// goroutine, except the driver loop in driver.go, which is the shell's
// side of the engine. api's TestClientLinksNoDaemon guards the client the
// same way.

// impureImports are the packages through which code reaches the OS; a
// path under one of them ("net/http", "os/exec") is as impure.
var impureImports = []string{"os", "syscall", "net", "golang.org/x/sys"}

// impureTimeCalls are the functions of package time that read the clock,
// sleep or arm a timer of the runtime.
var impureTimeCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// shellFiles may start goroutines and use the runtime's time: the driver
// loop runs the engine on a scheduler.
var shellFiles = []string{"driver.go"}

func isImpureImport(path string) bool {
	for _, p := range impureImports {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// impurities lists what breaks the engine's purity in one parsed file,
// each as "file:line: what".
func impurities(fset *token.FileSet, name string, f *ast.File) []string {
	var found []string
	at := func(pos token.Pos, what string) {
		found = append(found, fset.Position(pos).String()+": "+what)
	}
	timeName := "" // the file's name for package time, if imported
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			at(imp.Pos(), "unreadable import "+imp.Path.Value)
			continue
		}
		if isImpureImport(path) {
			at(imp.Pos(), "imports "+path)
		}
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
			if timeName == "." && !slices.Contains(shellFiles, name) {
				// Its Now would read as a call of the package's own.
				at(imp.Pos(), "imports time with a dot")
			}
		}
	}
	if slices.Contains(shellFiles, name) {
		return found
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n.Pos(), "starts a goroutine")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && id.Obj == nil &&
				slices.Contains(impureTimeCalls, n.Sel.Name) {
				at(n.Pos(), "uses time."+n.Sel.Name)
			}
		}
		return true
	})
	return found
}

func parseForPurity(t *testing.T, name, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return impurities(fset, name, f)
}

// TestEngineIsPure reads the engine's own files.
func TestEngineIsPure(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range parseForPurity(t, name, string(src)) {
			t.Errorf("engine is not pure: %s", bad)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d files of package engine; the test runs in the wrong directory", checked)
	}
}

// TestImpurities shows what the check catches and what it lets pass.
func TestImpurities(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []string
	}{
		{"pure", "service.go", `package engine
import "time"
func f(now time.Time) time.Time { return now.Add(time.Second) }`, nil},
		{"os", "service.go", `package engine
import "os"
var _ = os.Args`, []string{"service.go:2:8: imports os"}},
		{"os/exec", "service.go", `package engine
import "os/exec"
var _ = exec.Command`, []string{"service.go:2:8: imports os/exec"}},
		{"syscall", "service.go", `package engine
import "syscall"
var _ = syscall.Getpid`, []string{"service.go:2:8: imports syscall"}},
		{"net/http", "driver.go", `package engine
import (
	"fmt"
	"net/http"
)
var _, _ = fmt.Sprint, http.Get`, []string{"driver.go:4:2: imports net/http"}},
		{"time.Now", "lease.go", `package engine
import "time"
func f() time.Time { return time.Now() }`, []string{"lease.go:3:29: uses time.Now"}},
		{"time renamed", "lease.go", `package engine
import clock "time"
func f() { clock.Sleep(clock.Second) }`, []string{"lease.go:3:12: uses time.Sleep"}},
		{"time.After and a goroutine", "reap.go", `package engine
import "time"
func f() { go func() { <-time.After(time.Second) }() }`,
			[]string{"reap.go:3:12: starts a goroutine", "reap.go:3:26: uses time.After"}},
		{"time with a dot", "service.go", `package engine
import . "time"
func f() Time { return Now() }`, []string{"service.go:2:8: imports time with a dot"}},
		{"the driver may", "driver.go", `package engine
import "time"
func f() { go func() { time.Sleep(time.Second) }() }`, nil},
		{"a local named time", "ops.go", `package engine
import "time"
var _ = time.Second
type clock struct{}
func (clock) Now() int { return 0 }
func f() int { var time clock; return time.Now() }`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseForPurity(t, tt.file, tt.src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("impurities = %q, want %q", got, tt.want)
			}
		})
	}
}
