package executor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
)

// TestOpsOnFullDataDir restarts the executor on a data dir that filled up
// (a tmpfs): the ops of a module whose files did not change run, since
// they need no write; once its settings change, its ops fail to prepare
// (the node's failure, FailPrepare) with the op, the target, the file and
// the errno in the message.
func TestOpsOnFullDataDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "state")
	testhost.Tmpfs(t, state, "1m")

	first := newAdapterIn(t, root, nil, nil)
	if o := first.run(t, 1, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("fingerprint before the disk filled: %+v", o)
	}
	testhost.FillDisk(t, filepath.Join(state, "filler"))

	// The next svcrun, on the full data dir.
	a := newAdapterIn(t, root, nil, nil)
	if o := a.run(t, 2, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Errorf("fingerprint on a full data dir, files unchanged: %+v", o)
	}

	// A reload that changes the module's settings must write them.
	file := filepath.Join(root, "svcrun.toml")
	node, err := nodeconfig.Parse(
		file, file, []byte(strings.Replace(testNode, "slots = 3", "slots = 4", 1)),
		nodeconfig.Host{Hostname: "h", MemoryBytes: 8 << 30, Cores: 2, Platform: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	mods, err := nodeconfig.LoadModules(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.x.Update(Config{Node: node, Modules: mods}); err != nil {
		t.Fatal(err)
	}
	o := a.run(t, 3, "okprobe", true, protocol.OpFingerprint)
	want := "fingerprint of probe test/okprobe: prepare the data dir of module test: svcenv: write " +
		filepath.Join(a.data, "settings.json") + ": no space left on device"
	if o.Failure != engine.FailPrepare || o.Message != want {
		t.Errorf("fingerprint on a full data dir, settings changed: %+v\nwant prepare: %s", o, want)
	}
}

// TestOpsOfReplacedBundle replaces the bundle as a package upgrade does
// (mv B B.old, cp -a B.old B), or removes it: until the executor is
// updated (a reload), ops fail to prepare, with a message that names what
// happened and the fix; after it, or once the bundle is back, they run.
func TestOpsOfReplacedBundle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, bundle string)
		want   string // after the bundle directory
		undo   func(t *testing.T, a *adapterFixture, bundle string)
	}{
		{"replaced", func(t *testing.T, bundle string) {
			rename(t, bundle, bundle+".old")
			if out, err := exec.Command("cp", "-a", bundle+".old", bundle).CombinedOutput(); err != nil {
				t.Fatalf("cp -a: %v: %s", err, out)
			}
		}, "): run `svcrun reload`", func(t *testing.T, a *adapterFixture, _ string) {
			mods, err := nodeconfig.LoadModules(a.node)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.x.Update(Config{Node: a.node, Modules: mods}); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(t *testing.T, bundle string) { rename(t, bundle, bundle+".old") },
			"): put it back, or take the module out of the configuration and run `svcrun reload`",
			func(t *testing.T, _ *adapterFixture, bundle string) { rename(t, bundle+".old", bundle) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdapter(t)
			if o := a.run(t, 1, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
				t.Fatalf("fingerprint before: %+v", o)
			}
			bundle := filepath.Join(filepath.Dir(a.node.File), "bundle")
			tc.change(t, bundle)
			o := a.run(t, 2, "okprobe", true, protocol.OpFingerprint)
			want := "fingerprint of probe test/okprobe: the bundle of module test was " + tc.name +
				" since it was loaded (directory " + bundle + tc.want
			if o.Failure != engine.FailPrepare || o.Message != want {
				t.Errorf("fingerprint: %+v\nwant prepare: %s", o, want)
			}
			tc.undo(t, a, bundle)
			if o := a.run(t, 3, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
				t.Errorf("fingerprint after: %+v", o)
			}
		})
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
