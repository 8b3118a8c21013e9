package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader over a fixed bundle and checks
// what must hold whatever the input: no panic, a module or an error, every
// message naming the file, and an accepted module obeying every rule.
func FuzzLoad(f *testing.F) {
	full, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(head + svc))
	f.Add([]byte(head + svc + "restart = { backoff_initial_s = 10, backoff_max_s = 5 }\n"))
	f.Add([]byte(head + "[sandbox]\nread = [\"/dev\"]\n" + svc))
	f.Add([]byte(head + "[[probes]]\nname = \"p\"\nexec = [\"bin/link-in\"]\nperiod_s = 0.5\n"))
	f.Add([]byte(head + "[[services]]\nname = \"s\"\nexec = [\"bin/link-out\"]\nplatforms = [\"linux\"]\n"))
	dir := makeBundle(f, "")
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := load(FileName, data, dir)
		if (m == nil) == (err == nil) {
			t.Fatalf("load returned module %v and error %v", m != nil, err)
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, FileName+":") {
					t.Fatalf("message does not name the file: %q", line)
				}
			}
			return
		}
		if _, perr := Parse(FileName, data); perr != nil {
			t.Fatalf("Load accepted what Parse rejects: %v", perr)
		}
		checkModule(t, m, root)
	})
}

func checkModule(t *testing.T, m *Module, root string) {
	t.Helper()
	if !moduleNameRE().MatchString(m.Name) || m.Version == "" || m.Dir != root {
		t.Fatalf("bad module header: %+v", m)
	}
	if len(m.Services)+len(m.Probes) == 0 {
		t.Fatal("a module with nothing in it")
	}
	names := map[string]bool{}
	for _, s := range m.Services {
		if !moduleNameRE().MatchString(s.Name) || names["s"+s.Name] {
			t.Fatalf("bad or duplicate service name %q", s.Name)
		}
		names["s"+s.Name] = true
		checkExec(t, root, s.Exec)
		r := s.Restart
		if r.MaxFailures < 1 || r.BackoffInitial <= 0 || r.BackoffInitial > r.BackoffMax || r.ResetAfter <= 0 {
			t.Fatalf("bad restart table %+v", r)
		}
		if s.IdleTimeout <= 0 || s.StartTimeout <= 0 {
			t.Fatalf("bad timeouts %v %v", s.IdleTimeout, s.StartTimeout)
		}
		switch s.Lifecycle {
		case OnDemand, Always, Manual:
		default:
			t.Fatalf("bad lifecycle %q", s.Lifecycle)
		}
		for _, p := range s.Pools {
			if p == ContainersPool || !resourceNameRE().MatchString(p) {
				t.Fatalf("bad pool %q", p)
			}
		}
		checkPlatforms(t, s.Platforms)
	}
	for _, p := range m.Probes {
		if !resourceNameRE().MatchString(p.Name) || names["p"+p.Name] || p.Period <= 0 {
			t.Fatalf("bad probe %+v", p)
		}
		names["p"+p.Name] = true
		checkExec(t, root, p.Exec)
		checkPlatforms(t, p.Platforms)
	}
	for _, g := range append(append([]string(nil), m.Sandbox.Read...), m.Sandbox.Write...) {
		if CheckGrantPath(g) != nil {
			t.Fatalf("accepted grant %q", g)
		}
	}
}

func checkExec(t *testing.T, root string, exec []string) {
	t.Helper()
	if len(exec) == 0 || checkExecPath(exec[0]) != nil || checkExecFile(root, exec[0]) != nil {
		t.Fatalf("accepted exec %q", exec)
	}
}

func checkPlatforms(t *testing.T, ps []string) {
	t.Helper()
	if ps != nil && len(ps) == 0 {
		t.Fatal("an accepted service runs nowhere")
	}
	for _, p := range ps {
		if !isPlatform(p) {
			t.Fatalf("accepted platform %q", p)
		}
	}
}
