package nodeconfig

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that any input gives a config or an error naming the
// file, and that an accepted config holds its invariants.
func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("node_id = \"n\"\ndata_dir = \"d\"\nmemory_budget_gb = 4\n[limits]\npids = 10\n"))
	f.Add([]byte("[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/opt\"] }\ntools = { jq = \"/usr/bin/jq\" }\n" +
		"settings = { a = [1, 2] }\n"))
	f.Add([]byte("socket = \"/run/x.sock\"\nsandbox = \"best_effort\"\nreap_period_s = 0.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("svcrun.toml", "/etc/svcrun/svcrun.toml", data, testHost)
		if (c == nil) == (err == nil) {
			t.Fatalf("config %v and error %v", c != nil, err)
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "svcrun.toml") {
					t.Fatalf("message does not name the file: %q", line)
				}
			}
			return
		}
		if !filepath.IsAbs(c.DataDir) || !filepath.IsAbs(c.Socket) || len(c.Socket) > maxSocketPath {
			t.Fatalf("bad paths %q %q", c.DataDir, c.Socket)
		}
		if c.MemoryBudgetGB <= 0 || c.MaxConcurrentOps < 1 || c.StatusPeriod <= 0 || c.ReapPeriod <= 0 ||
			c.FingerprintPeriod <= 0 {
			t.Fatalf("bad numbers %+v", c)
		}
		if c.Sandbox != SandboxRequire && c.Sandbox != SandboxBestEffort {
			t.Fatalf("bad sandbox %q", c.Sandbox)
		}
		for _, m := range c.Modules {
			if !filepath.IsAbs(m.Bundle) {
				t.Fatalf("relative bundle %q", m.Bundle)
			}
			for _, g := range append(append([]string(nil), m.Grants.Read...), m.Grants.Write...) {
				if strings.HasPrefix(c.DataDir+"/", g+"/") || strings.HasPrefix(g+"/", c.DataDir+"/") {
					t.Fatalf("grant %q overlaps data dir %q", g, c.DataDir)
				}
			}
		}
	})
}
