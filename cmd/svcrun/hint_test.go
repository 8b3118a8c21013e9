package main

import (
	"testing"

	"github.com/oarbank/svcrun/api"
)

// The command that clears an unhealthy service is the CLI's hint: the
// engine's reason only says the service is unhealthy.
func TestResetHint(t *testing.T) {
	st := api.Status{
		Services: []api.ServiceStatus{
			{Name: "db/kv", Unhealthy: true, Capabilities: []string{"kv"}},
			{Name: "db/gpu", Unhealthy: true},
			{Name: "web/cache", Capabilities: []string{"cache"}},
		},
		Pools: []api.PoolStatus{{Name: "gpus", Service: "db/gpu"}, {Name: "slots", Service: "web/cache"}},
	}
	const look = "svcrun status shows the services, pools and probes"
	for _, tc := range []struct {
		name string
		st   api.Status
		req  api.AcquireRequest
		want string
	}{
		{"capability of an unhealthy service", st, api.AcquireRequest{Capabilities: []string{"kv"}},
			"db/kv is unhealthy: svcrun reset db/kv clears its failures; " + look},
		{"pool of an unhealthy service", st, api.AcquireRequest{Pools: map[string]int64{"gpus": 1}},
			"db/gpu is unhealthy: svcrun reset db/gpu clears its failures; " + look},
		{"needed pool and capability", st, api.AcquireRequest{Capabilities: []string{"kv"}, NeedsPools: []string{"gpus"}},
			"db/kv is unhealthy: svcrun reset db/kv clears its failures; db/gpu is unhealthy: svcrun reset db/gpu clears its " +
				"failures; " + look},
		{"healthy services only", st,
			api.AcquireRequest{Capabilities: []string{"cache"}, Pools: map[string]int64{"slots": 1}},
			look + "; svcrun reset SERVICE clears an unhealthy service"},
		{"status unknown", api.Status{}, api.AcquireRequest{Capabilities: []string{"kv"}},
			look + "; svcrun reset SERVICE clears an unhealthy service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resetHint(tc.st, tc.req); got != tc.want {
				t.Errorf("hint\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
