package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DisableCores sets svcrun's own RLIMIT_CORE to 0, soft and hard, so every
// op is born with a hard limit of 0 that it cannot raise, whoever it runs
// as (lowering an op's hard limit after its start needs CAP_SYS_RESOURCE
// for run_as ops). The price: svcrun itself leaves no core dump.
func DisableCores() error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return fmt.Errorf("sandbox: %s: setrlimit(RLIMIT_CORE, 0, 0): %w", LayerCoreLimit, err)
	}
	return nil
}
