package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/oarbank/svcrun/api"
)

// svcrun run gives its command a services file (0600, removed once the
// command ends) with the node, the lease, the labels to put on objects, and
// every service and probe the lease uses with its latest fingerprint's
// attrs: the demo service's objects dir reaches the job.
func TestRunServicesFile(t *testing.T) {
	_, sock := served(t)
	tests := []struct {
		name     string
		caps     []string
		services []string // names in the file
		probes   []string
		labelled string // the labels' oarbank.service
	}{
		{name: "one service", caps: []string{"kv"}, services: []string{"demo/kv"}, probes: []string{}, labelled: "demo/kv"},
		{name: "a service and a probe", caps: []string{"kv", "posix-sh"}, services: []string{"demo/kv"},
			probes: []string{"demo/posix-sh"}, labelled: "demo/kv"},
		{name: "a probe only", caps: []string{"posix-sh"}, services: []string{}, probes: []string{"demo/posix-sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"run", "--socket", sock, "--attempt", "attempt-" + strings.ReplaceAll(tt.name, " ", "-")}
			for _, c := range tt.caps {
				args = append(args, "--capability", c)
			}
			args = append(args, "--", "sh", "-c", `stat -c %a "$OARBANK_SERVICES_FILE"; echo "$OARBANK_SERVICES_FILE"; `+
				`echo "$OARBANK_NODE_ID"; cat "$OARBANK_SERVICES_FILE"`)
			code, out, errs := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			mode, rest, _ := strings.Cut(out, "\n")
			path, rest, _ := strings.Cut(rest, "\n")
			node, rest, _ := strings.Cut(rest, "\n")
			if mode != "600" || node != "cli-node" {
				t.Errorf("file mode %s, OARBANK_NODE_ID %q", mode, node)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the services file %s is left after CMD ended: %v", path, err)
			}
			var f api.ServicesFile
			if err := json.Unmarshal([]byte(rest), &f); err != nil {
				t.Fatalf("services file: %v\n%s", err, rest)
			}
			want := map[string]string{"oarbank.attempt_id": args[4], "oarbank.node": "cli-node"}
			if tt.labelled != "" {
				want["oarbank.service"] = tt.labelled
			}
			if f.NodeID != "cli-node" || f.Attempt != args[4] || !strings.HasPrefix(f.Lease, "lease-") ||
				!reflect.DeepEqual(f.Labels, want) {
				t.Errorf("file %+v, want labels %v", f, want)
			}
			var svcs, prbs []string
			for _, s := range f.Services {
				svcs = append(svcs, s.Name)
				if dir, _ := s.Attrs["objects_dir"].(string); !strings.HasSuffix(dir,
					filepath.Join("modules", "demo", "objects")) ||
					!reflect.DeepEqual(s.Capabilities, []string{"kv"}) || s.Labels["oarbank.service"] != s.Name {
					t.Errorf("service %+v: want demo/kv's capability and its objects dir", s)
				}
			}
			for _, p := range f.Probes {
				prbs = append(prbs, p.Name)
				if p.Capability != "posix-sh" || p.Attrs["shell"] != "/bin/sh" {
					t.Errorf("probe %+v", p)
				}
			}
			if !reflect.DeepEqual(append([]string{}, svcs...), tt.services) ||
				!reflect.DeepEqual(append([]string{}, prbs...), tt.probes) {
				t.Errorf("services %v probes %v, want %v %v\n%s", svcs, prbs, tt.services, tt.probes, rest)
			}
		})
	}
}

// acquire --json prints the grant with what the lease uses: the demo
// service's fingerprint attrs reach a job that holds its lease itself.
func TestAcquireJSONCarriesUses(t *testing.T) {
	_, sock := served(t)
	code, out, errs := run(t, "acquire", "--socket", sock, "--json", "--capability", "kv", "--capability", "posix-sh")
	if code != 0 {
		t.Fatalf("acquire: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	var g api.Grant
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, out)
	}
	u := g.Uses
	if g.NodeID != "cli-node" || len(u.Services) != 1 || u.Services[0].Attrs["objects_dir"] == nil || len(u.Probes) != 1 ||
		u.Probes[0].Attrs["shell"] != "/bin/sh" {
		t.Errorf("grant %s", out)
	}
}

// svcrun reap waits for its round and prints what it destroyed, kept and
// why: the volume examples/make-volume.sh left (its attempt ended) is
// destroyed, one of a live attempt and one made by hand are kept. Two
// reaps at once both get an answer.
func TestReapWaitsForTheRound(t *testing.T) {
	_, sock := served(t)
	t.Setenv(EnvSocket, sock)
	code, _, errs := run(t, "acquire", "--capability", "kv", "--attempt", "attempt-live")
	if code != 0 {
		t.Fatalf("acquire: %d %s", code, errs)
	}
	code, out, errs := run(t, "run", "--capability", "kv", "--attempt", "attempt-job", "--",
		"../../examples/make-volume.sh")
	if code != 0 {
		t.Fatalf("make-volume.sh: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	made := strings.TrimPrefix(strings.TrimSpace(out), "created ")
	objects := filepath.Dir(made)
	if filepath.Base(made) != "vol-attempt-job" {
		t.Fatalf("make-volume.sh made %q", made)
	}
	for dir, labels := range map[string]map[string]string{
		"vol-live": {"attempt_id": "attempt-live", "node": "cli-node", "service": "demo/kv"},
		"by-hand":  {},
	} {
		if err := os.MkdirAll(filepath.Join(objects, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range labels {
			if err := os.WriteFile(filepath.Join(objects, dir, k), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	code, out, errs = run(t, "reap", "--json")
	if code != 0 {
		t.Fatalf("reap: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	var r api.ReapResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reap --json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, s := range r.Services {
		for _, o := range s.Objects {
			got[o.ID] = o.Outcome + " " + o.Reason
		}
	}
	want := map[string]string{"vol-attempt-job": "destroyed ", "vol-live": "kept attempt live",
		"by-hand": "kept missing labels"}
	if r.Round == 0 || len(r.Services) != 1 || r.Services[0].Service != "demo/kv" || !reflect.DeepEqual(got, want) {
		t.Fatalf("reap round: %+v\n got %v\nwant %v", r, got, want)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("the orphan volume is still there: %v", err)
	}

	// The text: an object a line, the totals last.
	code, out, errs = run(t, "reap")
	if code != 0 || !strings.Contains(out, "  kept       vol-live  volume, attempt attempt-live: attempt live\n") ||
		!strings.HasSuffix(out, "0 destroyed, 2 kept, 0 failed\n") {
		t.Errorf("reap: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	var wg sync.WaitGroup
	var results [2]string
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errs := run(t, "reap", "--json")
			results[i] = out
			if code != 0 {
				t.Errorf("concurrent reap %d: exit %d %s", i, code, errs)
			}
		}()
	}
	wg.Wait()
	for i, res := range results {
		var rr api.ReapResult
		if err := json.Unmarshal([]byte(res), &rr); err != nil || rr.Round <= r.Round {
			t.Errorf("concurrent reap %d: round %d after round %d: %v\n%s", i, rr.Round, r.Round, err, res)
		}
	}
}
