package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/engine"
)

// JobRunner runs a job against a running service as `svcrun run` runs its
// command: g is the grant of a lease on the service, from which it writes
// the services file (OARBANK_SERVICES_FILE) and gives the command
// OARBANK_ATTEMPT_ID, OARBANK_LEASE_ID and OARBANK_NODE_ID. It returns
// once the command has ended.
type JobRunner func(ctx context.Context, g api.Grant) JobRun

// JobRun is the evidence of a job.
type JobRun struct {
	Command string `json:"command"`
	Attempt string `json:"attempt"`
	// Error says why the job could not run or was ended (the services
	// file, the exec, its time bound); "" when it ran to its end.
	Error      string  `json:"error,omitempty"`
	ExitCode   int     `json:"exit_code"`
	Stdout     string  `json:"stdout"`
	StderrTail string  `json:"stderr_tail,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// failed says why the job did not succeed; "" when it did.
func (j JobRun) failed() string {
	switch {
	case j.Error != "":
		return j.Error
	case j.ExitCode != 0:
		msg := fmt.Sprintf("exit %d", j.ExitCode)
		if lines := strings.Split(strings.TrimSpace(j.StderrTail), "\n"); lines[len(lines)-1] != "" {
			msg += ": " + lines[len(lines)-1]
		}
		return msg
	}
	return ""
}

// grant is the grant of a lease of attempt on the running service t, whose
// latest fingerprint gave attrs: what svcrun would give a job.
func (s *session) grant(t engine.Target, attempt string, attrs map[string]any) api.Grant {
	used := api.UsedService{Name: t.String(), Capabilities: []string{}, Attrs: attrs}
	if used.Attrs == nil {
		used.Attrs = map[string]any{}
	}
	for _, svc := range s.mod.Services {
		if svc.Name == t.Name && svc.Capabilities != nil {
			used.Capabilities = svc.Capabilities
		}
	}
	return api.Grant{
		Lease: "svcrun-check-" + attempt, Attempt: attempt, NodeID: s.node.NodeID,
		Uses: api.Uses{Services: []api.UsedService{used}, Probes: []api.UsedProbe{}},
	}
}
