package agent

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
)

// TestKnownServiceAsksTheSnapshot: whether a service exists is looked up
// in the published snapshot by its target, with no copy of the status:
// the agent here has no executor nor store, which Status needs.
func TestKnownServiceAsksTheSnapshot(t *testing.T) {
	kv := engine.Target{Module: "demo", Name: "kv"}
	a := &Agent{}
	a.snaps.store(&Status{Status: engine.Status{
		Services: []engine.ServiceStatus{{Name: "demo/kv", Target: kv}, {Name: "demo/web"}},
		Leases:   []engine.LeaseStatus{{ID: "lease-1"}, {ID: "lease-2", Admitted: true}},
	}})
	tests := []struct {
		target engine.Target
		known  []string // nil: found
	}{
		{kv, nil},
		{engine.Target{Module: "demo", Name: "nope"}, []string{"demo/kv", "demo/web"}},
	}
	for _, tt := range tests {
		err := a.knownService(context.Background(), tt.target)
		var nf *errdefs.NotFoundError
		switch {
		case tt.known == nil && err != nil:
			t.Errorf("%s: %v, want found", tt.target, err)
		case tt.known != nil && (!errors.As(err, &nf) || !slices.Equal(nf.Known, tt.known)):
			t.Errorf("%s: %v, want not found among %v", tt.target, err, tt.known)
		}
	}
	st := a.snaps.cur.Load()
	if l, ok := st.lease("lease-2"); !ok || !l.Admitted {
		t.Errorf("lease-2: %+v, %v", l, ok)
	}
	if _, ok := st.lease("lease-3"); ok {
		t.Error("lease-3 found")
	}
}
