package modules

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needMemcached skips without memcached or Debian's python3, which the
// module's executables name, except where REQUIRE_KERNEL_FEATURES=1.
func needMemcached(t *testing.T) {
	need(t, "memcached", "/usr/bin/memcached")
	need(t, "python3", "/usr/bin/python3")
}

// TestMemcached: the memcached module, in Python with the vendored SDK,
// through its lifecycle; its pool counts the free connections and its
// reserve is its cache size; a labelled key is an owned object that
// destroy removes.
func TestMemcached(t *testing.T) {
	needMemcached(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "memcached", "memcached", m, "memory_mb = 16, max_connections = 40")
			sock := filepath.Join(n.data, "run", "memcached.sock")
			runService(t, n, lifecycle{
				svc: "memcached",
				check: func(t *testing.T, n *node, fp result) {
					if fp.Attrs["socket"] != sock || fp.Reserve == nil || math.Abs(fp.Reserve.MemGB-16.0/1024) > 1e-9 {
						t.Errorf("fingerprint %+v: want socket %s and 16 MB", fp, sock)
					}
					if fp.Pools["memcached-conns"] != 40 {
						t.Errorf("pool %d, want all 40 connections free", fp.Pools["memcached-conns"])
					}
					// Keys made by hand, or for another node, are not the
					// service's.
					mc(t, sock, "oarbank.obj.byhand", `{"labels":{"oarbank.node":"`+n.id+`"}}`)
					mc(t, sock, "oarbank.obj.other-node",
						`{"labels":{"oarbank.attempt_id":"a9","oarbank.node":"node-2","oarbank.service":"memcached/memcached"}}`)
					mc(t, sock, "oarbank.obj.not-json", `hello`)
					if objs := n.op("memcached", "list_owned").Objects; len(objs) != 0 {
						t.Errorf("list_owned %+v: want none of the keys not labelled for this node", objs)
					}
				},
				object: func(t *testing.T, n *node, attempt string) string {
					labels, _ := json.Marshal(map[string]any{"labels": map[string]string{
						"oarbank.attempt_id": attempt, "oarbank.node": n.id, "oarbank.service": "memcached/memcached"}})
					mc(t, sock, "oarbank.obj.cache-"+attempt, string(labels))
					return "cache-" + attempt
				},
			})
		})
	}
}

// mc sets key to value in the memcached of sock, with Debian's python3
// and the module's own client.
func mc(t *testing.T, sock, key, value string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-IBc", `import sys; sys.path.insert(0, "memcached/lib"); import mcclient
with mcclient.Client(sys.argv[1]) as c: c.set(sys.argv[2], sys.argv[3].encode())`, sock, key, value)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("set %s: %v\n%s", key, err, out)
	}
}

// TestMemcachedJob: memcached/job.py reaches memcached through the services
// file and sets a labelled key, which reap deletes once its attempt has
// ended.
func TestMemcachedJob(t *testing.T) {
	needMemcached(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "memcached", "memcached", m, "memory_mb = 16")
			runJob(t, n, "memcached", job{
				capability: "memcached",
				svc:        "memcached",
				exe:        "job.py",
				object:     func(a string) string { return "job-" + a },
				check: func(t *testing.T, out string) {
					if !strings.Contains(out, "hello from jobtest-1") {
						t.Errorf("job said %q, want the greeting it stored", out)
					}
				},
			})
		})
	}
}

// TestMemcachedCheck: svcrun check --job passes the memcached module, every
// check of it.
func TestMemcachedCheck(t *testing.T) {
	needMemcached(t)
	job, err := filepath.Abs("memcached/job.py")
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"memory_mb": 16}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(svcrunBin, "check", "--json", "--bundle", "memcached", "--settings", settings, "--job", job)
	out, err := cmd.Output()
	var rep struct {
		Checks []struct {
			Target  string `json:"target"`
			Check   string `json:"check"`
			Status  string `json:"status"`
			Summary string `json:"summary"`
		} `json:"checks"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("svcrun check: %v, %v: %s", err, jerr, out)
	}
	if err != nil {
		t.Errorf("svcrun check: %v\n%s", err, out)
	}
	passed := 0
	for _, c := range rep.Checks {
		if c.Status != "pass" {
			t.Errorf("%s %s: %s: %s", c.Target, c.Check, c.Status, c.Summary)
			continue
		}
		passed++
		if c.Check == "list-owned-labels" && !strings.Contains(c.Summary, "removed it from list_owned") {
			t.Errorf("list-owned-labels passed without the job's object: %s", c.Summary)
		}
	}
	// fingerprint, lifecycle, start-twice, stop-twice, stop-empties,
	// fingerprint-running, list-owned-labels, destroy-unknown,
	// destroy-force, output, timeouts.
	if passed < 11 {
		t.Errorf("%d checks passed, want at least 11:\n%s", passed, out)
	}
}
