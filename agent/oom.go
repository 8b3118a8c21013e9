package agent

import (
	"sync"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/nodeconfig"
)

// OOMScoreAdj is the oom_score_adj `svcrun serve` gives itself: under
// memory pressure the kernel kills a daemon (a few hundred MiB that
// svcrun restarts) before the agent that manages them (a few MiB, whose
// death leaves every service unmanaged). Not -1000: a svcrun that leaks
// must still be killable.
const OOMScoreAdj = -900

// oomReset gives ops, and so the daemons they leave, the oom_score_adj 0
// instead of svcrun's own: a child inherits its parent's at fork, and Go
// runs nothing in the child between fork and exec. So while at least one
// op is being forked svcrun's own is 0, and it goes back after (as the
// sandbox does with RLIMIT_CORE). Lowering it back needs the privilege
// that lowered it first (CAP_SYS_RESOURCE), which svcrun keeps.
type oomReset struct {
	self string // svcrun's oom_score_adj as read at Open

	mu    sync.Mutex
	users int
}

// newOOMReset is nil (nothing to reset) when svcrun's oom_score_adj is 0
// or cannot be read.
func newOOMReset() *oomReset {
	self, err := readOOMScoreAdj()
	if err != nil || self == "0" {
		return nil
	}
	return &oomReset{self: self}
}

// hooks wraps the sandbox's hooks of every target so that each op is
// forked with the oom_score_adj 0.
func (o *oomReset) hooks(inner func(engine.Target, nodeconfig.LoadedModule) (executor.Hooks,
	error)) func(engine.Target, nodeconfig.LoadedModule) (executor.Hooks, error) {
	if o == nil {
		return inner
	}
	return func(t engine.Target, m nodeconfig.LoadedModule) (executor.Hooks, error) {
		var h executor.Hooks
		if inner != nil {
			var err error
			if h, err = inner(t, m); err != nil {
				return h, err
			}
		}
		// Around the sandbox's Launch, not inside it: the thread it
		// confines with Landlock may not open /proc/self.
		launch := h.Launch
		h.Launch = func(start func() error) error {
			o.enter()
			defer o.exit()
			if launch == nil {
				return start()
			}
			return launch(start)
		}
		return h, nil
	}
}

// enter and exit bracket a fork. A write that fails leaves the op with
// svcrun's value, a lesser harm than refusing to start it: the write
// that set svcrun's own succeeded.
func (o *oomReset) enter() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.users == 0 {
		_ = writeOOMScoreAdj("0")
	}
	o.users++
}

func (o *oomReset) exit() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.users--; o.users == 0 {
		_ = writeOOMScoreAdj(o.self)
	}
}
