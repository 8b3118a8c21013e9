// Command kvfile is the service of the kvfile example module, written with
// the Go SDK: the seven ops through module.Main, and, as `kvfile serve`,
// the daemon its start leaves behind, a key-value store over HTTP on a Unix
// socket in the module data dir. Its pool kv-buckets is the number of
// buckets it can still make (the setting max_buckets, default 8, minus the
// buckets there are); the buckets are the objects it owns.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sdk/module"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, "kvfile serve:", err)
			os.Exit(1)
		}
		return
	}
	module.Main(kv{})
}

type kv struct{}

func daemon(c *module.Call) (module.Daemon, error) {
	exe, err := os.Executable()
	if err != nil {
		return module.Daemon{}, fmt.Errorf("find my own executable: %w", err)
	}
	return module.Daemon{
		PIDFile: c.Path("kvfile.pid"),
		Path:    exe,
		Args:    []string{"serve"},
		Dir:     c.Data,
		LogFile: c.Path("kvfile.log"),
	}, nil
}

func socket(e module.Env) string { return e.Path("run", "kvfile.sock") }

func (kv) Fingerprint(c *module.Call) (protocol.Fingerprint, error) {
	d, err := daemon(c)
	if err != nil {
		return protocol.Fingerprint{}, err
	}
	maxBuckets := 8
	if _, err := c.Setting("max_buckets", &maxBuckets); err != nil {
		return protocol.Fingerprint{}, err
	}
	list, err := listBuckets(c.Env)
	if err != nil {
		return protocol.Fingerprint{}, err
	}
	running := d.Alive()
	return protocol.Fingerprint{
		Healthy: true,
		Running: &running,
		Attrs:   map[string]any{"socket": socket(c.Env), "max_buckets": float64(maxBuckets)},
		Pools:   map[string]int64{"kv-buckets": int64(max(0, maxBuckets-len(list)))},
	}, nil
}

func (kv) Start(c *module.Call) (protocol.OpResult, error) {
	d, err := daemon(c)
	if err != nil {
		return protocol.OpResult{}, err
	}
	started, err := d.Start()
	if err != nil {
		return protocol.OpResult{}, fmt.Errorf("start the daemon: %w", err)
	}
	if !started {
		return protocol.OpResult{Message: "already running"}, nil
	}
	return protocol.OpResult{Changed: true}, nil
}

func (kv) Stop(c *module.Call) (protocol.OpResult, error) {
	d, err := daemon(c)
	if err != nil {
		return protocol.OpResult{}, err
	}
	stopped, escalated, err := d.Stop(10 * time.Second)
	if err != nil {
		return protocol.OpResult{}, err
	}
	if !stopped {
		return protocol.OpResult{Message: "not running"}, nil
	}
	return protocol.OpResult{Changed: true, Escalated: escalated}, nil
}

func (k kv) Status(c *module.Call) (protocol.Status, error) {
	d, err := daemon(c)
	if err != nil {
		return protocol.Status{}, err
	}
	if !d.Alive() {
		return protocol.Status{Message: "not running"}, nil
	}
	client := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket(c.Env))
		},
	}}
	resp, err := client.Get("http://kvfile/health")
	if err != nil {
		return protocol.Status{Running: true, Message: "not answering yet"}, nil
	}
	resp.Body.Close()
	return protocol.Status{Running: true, Ready: resp.StatusCode == http.StatusOK}, nil
}

func (k kv) Ready(c *module.Call) (protocol.Status, error) { return k.Status(c) }

func (kv) ListOwned(c *module.Call) (protocol.OwnedList, error) {
	list, err := listBuckets(c.Env)
	if err != nil {
		return protocol.OwnedList{}, err
	}
	var l protocol.OwnedList
	for _, b := range list {
		if protocol.ValidObjectID(b.id) != nil {
			c.Logf("skipped bucket %q: not a valid object id", b.id)
			continue
		}
		if !c.Owns(b.Labels) {
			c.Logf("skipped bucket %q: not labelled for this node and service", b.id)
			continue
		}
		l.Objects = append(l.Objects,
			protocol.Object{ID: b.id, Kind: protocol.KindVolume, Labels: b.Labels, CreatedAt: b.Created})
	}
	return l, nil
}

func (kv) Destroy(c *module.Call, id string, _ bool) (protocol.OpResult, error) {
	dir := filepath.Join(bucketsDir(c.Env), id)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return protocol.OpResult{Message: "already gone"}, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return protocol.OpResult{}, fmt.Errorf("remove bucket %s: %w", id, err)
	}
	return protocol.OpResult{Changed: true}, nil
}
