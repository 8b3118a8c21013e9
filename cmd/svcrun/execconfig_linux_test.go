package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestOpExecConfigIsTheAgents: for one node configuration, `svcrun op
// --config` runs its op with the executor configuration the daemon runs
// its ops with (node, module, run_as identity, sandbox hooks): it fails as
// soon as one of them builds its own.
func TestOpExecConfigIsTheAgents(t *testing.T) {
	cases := []struct {
		name  string
		runAs bool
	}{
		{name: "own user"},
		{name: "run_as", runAs: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			runAs := ""
			if c.runAs {
				if os.Geteuid() != 0 {
					t.Skip("run_as needs root")
				}
				runAs = fmt.Sprintf("run_as = %q\n", testhost.RunAs(t).Name)
			}
			bundle := filepath.Join(root, "bundle")
			writeBundle(t, bundle, map[string]string{
				"module.toml": "[module]\nname = \"box\"\nversion = \"1\"\n\n[sandbox]\nread = [\"/etc/ssl\"]\n\n" +
					"[[services]]\nname = \"svc\"\nexec = [\"bin/svc\"]\n\n[[probes]]\nname = \"p\"\nexec = [\"bin/svc\"]\n",
				"bin/svc": "#!/bin/sh\nexit 0\n",
			})
			cfg := filepath.Join(root, "svcrun.toml")
			text := "node_id = \"n1\"\ndata_dir = \"data\"\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n" + runAs +
				"\n[[modules]]\nbundle = \"" + bundle + "\"\ngrants = { read = [\"/etc/ssl\"] }\nsettings = { slots = 3 }\n"
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}

			// The agent's configuration, caught where it builds its
			// executor; the refusal makes Open undo what it opened.
			var daemon executor.Config
			caught := errors.New("configuration caught")
			_, err := agent.Open(agent.Options{
				ConfigPath: cfg, Logger: slog.New(slog.DiscardHandler), NoContainers: true, PressureFile: noPressure,
				NewExecutor: func(c executor.Config, _ func(engine.Event)) (agent.Executor, error) {
					daemon = c
					return nil, caught
				},
			})
			if !errors.Is(err, caught) {
				t.Fatalf("agent.Open: %v, want the executor's refusal", err)
			}
			node, err := loadOpNode(cfg, "box/svc")
			if err != nil {
				t.Fatal(err)
			}
			op := node.execConfig()

			if c.runAs && (op.Owner == nil || op.User == "") {
				t.Fatalf("op runs as %q, owner %v: run_as was not applied", op.User, op.Owner)
			}
			if len(daemon.Modules) != 1 {
				t.Fatalf("the agent loaded %d modules, want 1", len(daemon.Modules))
			}
			if op.Hooks == nil || daemon.Hooks == nil {
				t.Fatalf("sandbox hooks: op's set %v, agent's set %v", op.Hooks != nil, daemon.Hooks != nil)
			}
			for _, tg := range []engine.Target{{Module: "box", Name: "svc"}, {Module: "box", Name: "p", Probe: true}} {
				dh, derr := daemon.Hooks(tg, daemon.Modules[0])
				oh, oerr := op.Hooks(tg, op.Modules[0])
				if fmt.Sprint(derr) != fmt.Sprint(oerr) {
					t.Errorf("%s: hooks refused: agent %v, op %v", tg, derr, oerr)
				}
				var dsys, osys syscall.SysProcAttr
				if dh.SysProcAttr != nil {
					dh.SysProcAttr(&dsys)
				}
				if oh.SysProcAttr != nil {
					oh.SysProcAttr(&osys)
				}
				if !reflect.DeepEqual(dsys, osys) {
					t.Errorf("%s: process attributes: agent %+v, op %+v", tg, dsys, osys)
				}
				// Launch is left out: the agent wraps it to fork with
				// oom_score_adj 0 when its own is not.
				if (dh.Started == nil) != (oh.Started == nil) {
					t.Errorf("%s: Started hook: agent's set %v, op's set %v", tg, dh.Started != nil, oh.Started != nil)
				}
			}
			// The rest must be the same but for what is the daemon's
			// own: its containers, its log and its pauses.
			daemon.Containers, daemon.Logger, daemon.Pauses = nil, nil, nil
			daemon.Hooks, op.Hooks = nil, nil
			if !reflect.DeepEqual(daemon, op) {
				t.Errorf("the configurations differ:\nagent %+v\nop    %+v", daemon, op)
			}
		})
	}
}
