package engine

import (
	"maps"
	"testing"

	"github.com/oarbank/svcrun/protocol"
)

// statusModule is a service m/svc (capability "kv") and a probe m/sh
// (capability "sh").
const statusModule = `
[module]
name = "m"
version = "1"
[[services]]
name = "svc"
exec = ["bin/svc"]
capabilities = ["kv"]
[[probes]]
name = "sh"
exec = ["bin/probe"]
`

// The status keeps each service's and probe's latest fingerprint: its
// attrs, health and message (and when it came), which jobs and svcrun
// status show.
func TestStatusKeepsTheLatestFingerprint(t *testing.T) {
	no := false
	tests := []struct {
		name      string
		svc, prb  Outcome
		wantSvc   ServiceStatus
		wantProbe ProbeStatus
	}{{
		name: "healthy, with attrs",
		svc: Outcome{Result: protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &no,
				Attrs: map[string]any{"socket": "/run/kv.sock", "port": 6379.0}}}},
		prb: Outcome{Result: protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Attrs: map[string]any{"shell": "/bin/sh"}}}},
		wantSvc:   ServiceStatus{Healthy: true, Attrs: map[string]any{"socket": "/run/kv.sock", "port": 6379.0}},
		wantProbe: ProbeStatus{Healthy: true, Attrs: map[string]any{"shell": "/bin/sh"}},
	}, {
		name: "unhealthy, with a message",
		svc: Outcome{Result: protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Healthy: false, Running: &no, Message: "disk full"}}},
		prb:       Outcome{Failure: FailTimeout, Message: "killed after 30s"},
		wantSvc:   ServiceStatus{Healthy: false, Message: "disk full"},
		wantProbe: ProbeStatus{Healthy: false, Message: "timeout: killed after 30s"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, statusModule)
			e := r.e
			if st := e.Status(); !st.Services[0].FingerprintedAt.IsZero() || st.Services[0].Attrs != nil {
				t.Fatalf("before any fingerprint: %+v", st.Services[0])
			}
			svcFP, prbFP := r.op("m/svc", protocol.OpFingerprint), r.op("m/sh", protocol.OpFingerprint)
			r.step(&OpDone{ID: svcFP, Outcome: tt.svc})
			now := r.now
			r.step(&OpDone{ID: prbFP, Outcome: tt.prb})
			st := e.Status()
			s, p := st.Services[0], st.Probes[0]
			if s.Healthy != tt.wantSvc.Healthy || s.Message != tt.wantSvc.Message ||
				!maps.Equal(s.Attrs, tt.wantSvc.Attrs) || !s.FingerprintedAt.Equal(now) {
				t.Errorf("service: healthy %v message %q attrs %v at %v; want %v %q %v at %v", s.Healthy, s.Message,
					s.Attrs, s.FingerprintedAt, tt.wantSvc.Healthy, tt.wantSvc.Message, tt.wantSvc.Attrs, now)
			}
			if p.Healthy != tt.wantProbe.Healthy || p.Message != tt.wantProbe.Message ||
				!maps.Equal(p.Attrs, tt.wantProbe.Attrs) {
				t.Errorf("probe: healthy %v message %q attrs %v; want %v %q %v", p.Healthy, p.Message, p.Attrs,
					tt.wantProbe.Healthy, tt.wantProbe.Message, tt.wantProbe.Attrs)
			}
			// A copy: changing it changes nothing in the engine.
			if s.Attrs != nil {
				s.Attrs["socket"] = "changed"
				if e.Status().Services[0].Attrs["socket"] == "changed" {
					t.Error("the status shares its attrs with the engine")
				}
			}
		})
	}
}

// StatusOf and OpsInFlight are parts of Status, read without building it
// whole: they must agree with it.
func TestStatusPartsAgreeWithStatus(t *testing.T) {
	e := newRig(t, statusModule).e
	st := e.Status()
	if len(st.Services) == 0 || len(st.Probes) == 0 {
		t.Fatalf("boot: %d services, %d probes", len(st.Services), len(st.Probes))
	}
	if got := e.OpsInFlight(); got != st.OpsInFlight || got == 0 {
		t.Errorf("OpsInFlight %d, Status has %d (the boot's fingerprints run)", got, st.OpsInFlight)
	}
	tests := []struct {
		name                string
		services, caps      []string
		wantSvcs, wantProbe int
	}{
		{"the service and the probe", []string{"m/svc"}, []string{"sh"}, 1, 1},
		{"the service only", []string{"m/svc"}, nil, 1, 0},
		{"unknown names", []string{"m/none"}, []string{"none"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svcs, prbs := e.StatusOf(tt.services, tt.caps)
			if len(svcs) != tt.wantSvcs || len(prbs) != tt.wantProbe {
				t.Fatalf("%d services, %d probes; want %d, %d", len(svcs), len(prbs), tt.wantSvcs, tt.wantProbe)
			}
			if len(svcs) > 0 && svcs[0].Name != st.Services[0].Name {
				t.Errorf("service %+v, Status has %+v", svcs[0], st.Services[0])
			}
			if len(prbs) > 0 && prbs[0].Name != st.Probes[0].Name {
				t.Errorf("probe %+v, Status has %+v", prbs[0], st.Probes[0])
			}
		})
	}
}
