package main

import (
	"strings"
	"testing"
)

// TestPackagedConfigValidates: the commented /etc/svcrun/svcrun.toml the
// Debian package installs is valid as it is, on a host with no module:
// exit 0, with the warning that it lists none.
func TestPackagedConfigValidates(t *testing.T) {
	code, out, errs := run(t, "validate", "--config", "../../packaging/svcrun.toml")
	if code != 0 || !strings.Contains(errs, "no [[modules]]") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
