package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestValidateAndSandboxJSON: the commands that read files answer --json
// with one document: ok and what they found, or the one failure shape.
func TestValidateAndSandboxJSON(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "module.toml"),
		[]byte("[module]\nname = \"x\"\nversion = \"1\"\n[[services]]\nname = \"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		check func(m map[string]any) bool
	}{
		{"valid bundle", []string{"validate", "--json", "--bundle", "../../examples/modules/demo"}, 0,
			func(m map[string]any) bool {
				mods, _ := m["modules"].([]any)
				mod, _ := mods[0].(map[string]any)
				svcs, _ := mod["services"].([]any)
				svc, _ := svcs[0].(map[string]any)
				return m["ok"] == true && mod["name"] == "demo" && svc["name"] == "demo/kv" && svc["start_timeout_s"] == 10.0
			}},
		{"valid config", []string{"validate", "--json", "--config", "../../examples/node.toml"}, 0,
			func(m map[string]any) bool {
				node, _ := m["node"].(map[string]any)
				return m["ok"] == true && node["node_id"] == "example-node"
			}},
		{"invalid bundle", []string{"validate", "--json", "--bundle", bad}, 1, func(m map[string]any) bool {
			errs, _ := m["errors"].([]any)
			return m["ok"] == false && m["code"] == "invalid" && m["error"] == "invalid: 1 error" && len(errs) == 1
		}},
		{"sandbox", []string{"sandbox", "--json", "--config", "../../examples/node.toml"}, 0, func(m map[string]any) bool {
			mods, _ := m["modules"].([]any)
			mod, _ := mods[0].(map[string]any)
			_, host := m["host"].(map[string]any)
			return m["ok"] == true && host && mod["module"] == "demo" && mod["plan"] != nil
		}},
		{"sandbox, no such file", []string{"sandbox", "--json", "--config", filepath.Join(bad, "none.toml")}, 1,
			func(m map[string]any) bool {
				return m["ok"] == false && m["error"] != ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil || code != tc.code || !tc.check(m) {
				t.Errorf("exit %d (want %d), %v\nstdout: %s\nstderr: %s", code, tc.code, err, out, errs)
			}
			if bad := badKeys(m, ""); len(bad) > 0 {
				t.Errorf("keys not in snake_case: %v", bad)
			}
		})
	}
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// badKeys lists, with their paths, the keys of a JSON document that are not
// snake_case: a Go field name without its json tag.
func badKeys(v any, path string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !snakeKey.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			bad = append(bad, badKeys(e, path+"."+k)...)
		}
	case []any:
		for _, e := range v {
			bad = append(bad, badKeys(e, path+"[]")...)
		}
	}
	return bad
}
