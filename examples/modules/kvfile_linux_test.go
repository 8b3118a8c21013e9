package modules

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/internal/testhost"
)

// kvfileBundle copies the kvfile bundle to a directory every account can
// read and builds bin/kvfile into it: the binary is never committed.
func kvfileBundle(t *testing.T) string {
	t.Helper()
	dir := testhost.SearchableDir(t)
	manifest, err := os.ReadFile("kvfile/module.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.toml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "kvfile"), "./kvfile")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kvfile: %v\n%s", err, out)
	}
	return dir
}

// TestKVFile: the Go SDK's example service through its lifecycle; its
// buckets are owned objects, its pool the buckets it can still make.
func TestKVFile(t *testing.T) {
	bundle := kvfileBundle(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, bundle, "kvfile", m, "max_buckets = 3")
			sock := filepath.Join(n.data, "run", "kvfile.sock")
			client := http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", sock)
				},
			}}
			put := func(t *testing.T, path, body string, want int) {
				req, _ := http.NewRequest(http.MethodPut, "http://kvfile"+path, strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("PUT %s: %s, want %d", path, resp.Status, want)
				}
			}
			runService(t, n, lifecycle{
				svc: "kv",
				check: func(t *testing.T, n *node, fp result) {
					if fp.Attrs["socket"] != sock || fp.Pools["kv-buckets"] != 3 {
						t.Errorf("fingerprint %+v: want socket %s and 3 buckets free", fp, sock)
					}
				},
				object: func(t *testing.T, n *node, attempt string) string {
					put(t, "/buckets/b-"+attempt+"?attempt="+attempt, "", http.StatusCreated)
					put(t, "/buckets/b-"+attempt+"/greeting", "hello", http.StatusOK)
					if got := n.op("kv", "fingerprint").Pools["kv-buckets"]; got != 2 {
						t.Errorf("pool %d with one bucket, want 2", got)
					}
					return "b-" + attempt
				},
			})
		})
	}
}
