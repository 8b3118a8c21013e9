package executor

import (
	"testing"

	"github.com/oarbank/svcrun/engine"
)

// TestServiceNameRoundTrip: the name a service's container and records go
// by reads back as the same service, and is the node-wide name status and
// the CLI use.
func TestServiceNameRoundTrip(t *testing.T) {
	cases := []struct {
		service engine.Target
		name    string
	}{
		{engine.Target{Module: "demo", Name: "kv"}, "demo/kv"},
		{engine.Target{Module: "a-b", Name: "c-0"}, "a-b/c-0"},
	}
	for _, c := range cases {
		if got := serviceName(c.service); got != c.name {
			t.Errorf("serviceName(%#v) = %q, want %q", c.service, got, c.name)
		}
		if got := serviceOf(c.name); got != c.service {
			t.Errorf("serviceOf(%q) = %#v, want %#v", c.name, got, c.service)
		}
	}
}
