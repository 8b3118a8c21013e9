package sandbox

import (
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/executor"
)

// hooksOf returns the executor hooks of a plan: Credential (run_as) in
// SysProcAttr, the fork on the policy's confined thread with svcrun's soft
// RLIMIT_CORE at 0 (Launch), and the op's hard RLIMIT_CORE at 0 once it
// runs (Started).
func hooksOf(p *Plan) executor.Hooks {
	var cred *syscall.Credential
	if a := p.RunAs; a != nil {
		cred = &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}}
		for _, g := range a.Groups {
			cred.Groups = append(cred.Groups, uint32(g))
		}
	}
	c := confinerFor(policyOf(p))
	return executor.Hooks{
		SysProcAttr: func(a *syscall.SysProcAttr) {
			if cred != nil {
				a.Credential = cred
			}
		},
		Launch: func(start func() error) error {
			return c.launch(func() error {
				if err := coreZero.enter(); err != nil {
					return err
				}
				defer coreZero.exit()
				return start()
			})
		},
		Started: limitCore,
	}
}

// RLIMIT_CORE. Resource limits belong to the process, not to a thread,
// and a child inherits its parent's. So while at least one op is being
// forked, svcrun's own soft RLIMIT_CORE is 0 (its hard limit unchanged,
// so that it can be raised back without privilege): the op is born with
// a soft limit of 0, with no window in which it could dump core. Then
// limitCore lowers the op's hard limit to 0 as well, with prlimit(2) on
// its pid; that needs CAP_SYS_RESOURCE when the op runs as another user
// (run_as), and without it the op keeps svcrun's hard limit (it could
// raise its own soft limit, and dump its own memory where it may write).
var coreZero coreLimiter

type coreLimiter struct {
	mu    sync.Mutex
	users int
	saved unix.Rlimit
}

func (l *coreLimiter) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users == 0 {
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &l.saved); err != nil {
			return fmt.Errorf("sandbox: %s: getrlimit(RLIMIT_CORE): %w", LayerCoreLimit, err)
		}
		if l.saved.Cur != 0 {
			if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: l.saved.Max}); err != nil {
				return fmt.Errorf("sandbox: %s: setrlimit(RLIMIT_CORE, 0): %w", LayerCoreLimit, err)
			}
		}
	}
	l.users++
	return nil
}

func (l *coreLimiter) exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users--; l.users == 0 && l.saved.Cur != 0 {
		unix.Setrlimit(unix.RLIMIT_CORE, &l.saved) // back up to at most the unchanged hard limit
	}
}

// limitCore sets the op's hard RLIMIT_CORE to 0 too, where svcrun may.
func limitCore(pid int) error {
	err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil)
	if err == nil || err == unix.EPERM || err == unix.ESRCH {
		// EPERM: another user and no CAP_SYS_RESOURCE; the soft limit
		// is 0 already. ESRCH: the op is gone already.
		return nil
	}
	return fmt.Errorf("sandbox: %s: prlimit(%d, RLIMIT_CORE, 0): %w", LayerCoreLimit, pid, err)
}
