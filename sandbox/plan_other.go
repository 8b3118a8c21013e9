//go:build !linux

package sandbox

import (
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// plan says that nothing is enforced on this platform.
func plan(cfg *nodeconfig.Config, mod *manifest.Module, _ nodeconfig.Module, f facts) (*Plan, error) {
	p := &Plan{Module: mod.Name, Mode: cfg.Sandbox, Network: mod.Sandbox.Network}
	p.Missing = []Missing{{LayerSandbox, notEnforced(f.goos)}}
	return p, nil
}
