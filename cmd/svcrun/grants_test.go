package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
		{name: "a service and a probe", caps: []string{"kv", "posix-sh"}, services: []string{"demo/kv"}, probes: []string{"demo/posix-sh"}, labelled: "demo/kv"},
		{name: "a probe only", caps: []string{"posix-sh"}, services: []string{}, probes: []string{"demo/posix-sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"run", "--socket", sock, "--attempt", "attempt-" + strings.ReplaceAll(tt.name, " ", "-")}
			for _, c := range tt.caps {
				args = append(args, "--capability", c)
			}
			args = append(args, "--", "sh", "-c", `stat -c %a "$OARBANK_SERVICES_FILE"; echo "$OARBANK_SERVICES_FILE"; echo "$OARBANK_NODE_ID"; cat "$OARBANK_SERVICES_FILE"`)
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
			if f.NodeID != "cli-node" || f.Attempt != args[4] || !strings.HasPrefix(f.Lease, "lease-") || !reflect.DeepEqual(f.Labels, want) {
				t.Errorf("file %+v, want labels %v", f, want)
			}
			var svcs, prbs []string
			for _, s := range f.Services {
				svcs = append(svcs, s.Name)
				if dir, _ := s.Attrs["objects_dir"].(string); !strings.HasSuffix(dir, filepath.Join("modules", "demo", "objects")) ||
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
			if !reflect.DeepEqual(append([]string{}, svcs...), tt.services) || !reflect.DeepEqual(append([]string{}, prbs...), tt.probes) {
				t.Errorf("services %v probes %v, want %v %v\n%s", svcs, prbs, tt.services, tt.probes, rest)
			}
		})
	}
}
