package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoStderrByHand: what a command of svcrun or svcsim says on stderr
// goes through internal/cli (Env.Printf, Warnf, Hintf, Progress, or the failure it
// returns), so that every line is named as the command's. Only these
// functions touch the stream itself, for what is no message of svcrun's:
// the child's own stderr, whether it is a terminal, the daemon's log.
func TestNoStderrByHand(t *testing.T) {
	allowed := map[string]bool{
		"main.go:main":                 true, // the stream given to the framework
		"../svcsim/main.go:main":       true,
		"runcmd.go:runRun":             true, // CMD's own stderr
		"container.go:runInContainer":  true, // the container's own stderr
		"container.go:runContainerCmd": true,
		"runcmd.go:acquireShowing":     true, // is stderr a terminal?
		"serve.go:newLogger":           true, // the daemon's log
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := filepath.Glob("../svcsim/*.go")
	if err != nil || len(sim) == 0 {
		t.Fatalf("svcsim's files: %v", err)
	}
	files = append(files, sim...)
	fset := token.NewFileSet()
	var found []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Stderr" {
					return true
				}
				// os.Stderr, or the Env's (m.Stderr, env.Stderr, n.m.Stderr):
				// not a child's cmd.Stderr being set.
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "cmd" {
					return true
				}
				where := file + ":" + fn.Name.Name
				if !allowed[where] {
					found = append(found, fset.Position(sel.Pos()).String()+" in "+fn.Name.Name)
				}
				return true
			})
		}
	}
	slices.Sort(found)
	for _, f := range found {
		t.Errorf("%s writes stderr by hand: print through the cli.Env, or return the failure", f)
	}
}
