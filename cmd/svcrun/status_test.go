package main

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
)

// svcrun status shows each service's and probe's latest fingerprint: its
// health, an unhealthy one's message, and its attrs, under its row; the
// table rows stay within 100 columns.
func TestStatusShowsFingerprints(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   api.Status
		want []string // lines, in order, trimmed
	}{{
		name: "healthy with attrs",
		st: api.Status{Now: now,
			Services: []api.ServiceStatus{
				{Name: "postgres/main-db", Lifecycle: "on_demand", State: "waiting-ready", Ready: false,
					Capabilities: []string{"sql"},
					Healthy:      true, FingerprintedAt: now.Add(-3 * time.Second),
					Attrs: map[string]any{"socket": "/var/lib/pg/.s.PGSQL.5432", "version": "16.4", "port": 5432.0}}},
			Pools: []api.PoolStatus{{Name: "databases", Service: "postgres/main-db", Offered: 16, Reserved: 2}},
			Probes: []api.ProbeStatus{
				{Name: "jdk/java", Capability: "jdk", Enabled: true, Reported: true, Healthy: true, CheckedAt: now,
					Attrs: map[string]any{"version": "17.0.12"}}},
		},
		want: []string{
			"SERVICE           LIFECYCLE  STATE          READY  REFS  FAILS  POOLS (RES/OFFER)  CAPABILITIES",
			"postgres/main-db  on_demand  waiting-ready  no     0     0      databases 2/16     sql",
			"fingerprint 3s ago: healthy",
			"attrs: port=5432, socket=/var/lib/pg/.s.PGSQL.5432, version=16.4",
			"PROBE     CAPABILITY  LAST RESULT  CHECKED",
			"jdk/java  jdk         healthy      0s ago",
			"attrs: version=17.0.12",
		},
	}, {
		name: "unhealthy with a message",
		st: api.Status{Now: now,
			Services: []api.ServiceStatus{
				{Name: "redis/cache", Lifecycle: "on_demand", State: "stopped", Healthy: false,
					Message: "maxmemory is 0: set it in the settings", FingerprintedAt: now.Add(-time.Minute)},
				{Name: "demo/kv", Lifecycle: "always", State: "unknown"},
			},
			Probes: []api.ProbeStatus{
				{Name: "jdk/java", Capability: "jdk", Enabled: true, Reported: true, Message: "java: not found", CheckedAt: now}},
		},
		want: []string{
			"redis/cache  on_demand  stopped  no     0     0      -                  -",
			"fingerprint 1m0s ago: UNHEALTHY: maxmemory is 0: set it in the settings",
			"demo/kv      always     unknown  no     0     0      -                  -",
			"fingerprint: none yet",
			"jdk/java  jdk         unhealthy    0s ago",
			"message: java: not found",
		},
	}, {
		name: "marked unhealthy, stopped",
		st: api.Status{Now: now,
			Services: []api.ServiceStatus{
				{Name: "demo/kv", Lifecycle: "on_demand", State: "stopped", Enabled: true, Failures: 3, Unhealthy: true,
					Reason: "start failed: exit status 1"},
				{Name: "demo/idle", Lifecycle: "on_demand", State: "stopped", Enabled: true},
			},
		},
		want: []string{
			"demo/kv    on_demand  unhealthy  no     0     3      -                  -",
			"note: UNHEALTHY: start failed: exit status 1 (svcrun reset demo/kv)",
			"demo/idle  on_demand  stopped    no     0     0      -                  -",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printStatus(&b, tt.st)
			out := b.String()
			lines := strings.Split(out, "\n")
			i := 0
			for _, l := range lines {
				if i < len(tt.want) && strings.TrimSpace(l) == tt.want[i] {
					i++
				}
				if len(l) > 100 {
					t.Errorf("a line of %d columns: %q", len(l), l)
				}
			}
			if i < len(tt.want) {
				t.Errorf("missing line %q (or out of order) in\n%s", tt.want[i], out)
			}
		})
	}
}
