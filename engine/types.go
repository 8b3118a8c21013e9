package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

// Config is what the engine knows of the node.
type Config struct {
	NodeID           string
	Platform         string // linux, macos or windows: services and probes of other platforms are not loaded
	MemoryBudgetGB   float64
	MaxConcurrentOps int
	StatusPeriod     time.Duration
	// WatchedStatusPeriod is the status period of a contained service
	// (ContainerPopulated): its death is an event, so status is only a
	// safety net. Default 300 s, never below StatusPeriod.
	WatchedStatusPeriod time.Duration
	FingerprintPeriod   time.Duration
	ReapPeriod          time.Duration
	// ReapSweepPeriod is how often a periodic reap round lists every
	// running service, even those with nothing known to reap: the safety
	// net for an object labelled with a service no lease of its attempt
	// used. Default 10 min, never below ReapPeriod.
	ReapSweepPeriod time.Duration

	// ReadyPoll is the pause between two ready ops while a start waits for
	// readiness. Default 1 s.
	ReadyPoll time.Duration
	// DoctorDebounce gathers doctor events arriving within this window into
	// one run of the probes. Default 1 s.
	DoctorDebounce time.Duration
	// ForceAfter is the number of reap periods (of time: ForceAfter x
	// ReapPeriod from the round that first found it, however many rounds
	// listed it meanwhile) an orphan must survive before it is destroyed
	// with --force. Default 3.
	ForceAfter int
}

func (c *Config) withDefaults() {
	if c.MaxConcurrentOps <= 0 {
		c.MaxConcurrentOps = 8
	}
	if c.StatusPeriod <= 0 {
		c.StatusPeriod = 10 * time.Second
	}
	if c.WatchedStatusPeriod <= 0 {
		c.WatchedStatusPeriod = 5 * time.Minute
	}
	c.WatchedStatusPeriod = max(c.WatchedStatusPeriod, c.StatusPeriod)
	if c.FingerprintPeriod <= 0 {
		c.FingerprintPeriod = 5 * time.Minute
	}
	if c.ReapPeriod <= 0 {
		c.ReapPeriod = time.Minute
	}
	if c.ReapSweepPeriod <= 0 {
		c.ReapSweepPeriod = 10 * time.Minute
	}
	c.ReapSweepPeriod = max(c.ReapSweepPeriod, c.ReapPeriod)
	if c.ReadyPoll <= 0 {
		c.ReadyPoll = time.Second
	}
	if c.DoctorDebounce <= 0 {
		c.DoctorDebounce = time.Second
	}
	if c.ForceAfter <= 0 {
		c.ForceAfter = 3
	}
}

// ModuleSpec is one module of the node configuration.
type ModuleSpec struct {
	Module  *manifest.Module
	Enabled bool
}

// Target is what an op runs: a service or a probe of a module.
type Target struct {
	Module string
	Name   string
	Probe  bool
}

// String is the target's node-wide name, "module/name".
func (t Target) String() string { return t.Module + "/" + t.Name }

// ServiceTarget reads a service's node-wide name, "module/name".
func ServiceTarget(name string) (Target, error) {
	mod, short, ok := strings.Cut(name, "/")
	if !ok || mod == "" || short == "" || strings.Contains(short, "/") {
		return Target{}, fmt.Errorf("service %q: not a service name (module/name)", name)
	}
	return Target{Module: mod, Name: short}, nil
}

// MarshalText writes a service target as its name, so that events that
// carry one journal it as "module/name".
func (t Target) MarshalText() ([]byte, error) {
	if t.Probe {
		return nil, fmt.Errorf("target %s: a probe has no text form", t)
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a service target written by MarshalText.
func (t *Target) UnmarshalText(b []byte) error {
	x, err := ServiceTarget(string(b))
	if err != nil {
		return err
	}
	*t = x
	return nil
}

// LeaseID names a lease; the caller chooses it and it is unique among live
// leases.
type LeaseID string

// Requirements is what a lease needs: pool tokens to reserve, pools that
// only need capacity, and capabilities.
type Requirements struct {
	Pools        map[string]int64 `json:"pools,omitempty"`
	NeedsPools   []string         `json:"needs_pools,omitempty"`
	Capabilities []string         `json:"capabilities,omitempty"`
}

// State is what the store keeps across agent restarts.
type State struct {
	Leases   []LeaseRecord
	Services []ServiceRecord
}

// LeaseRecord is an admitted lease as stored.
type LeaseRecord struct {
	ID      LeaseID `json:"id"`
	Job     string  `json:"job,omitempty"`
	Attempt string  `json:"attempt"`
	Requirements
	TTL      time.Duration `json:"ttl,omitempty"`
	Expires  time.Time     `json:"expires,omitzero"` // zero when TTL is 0
	Admitted time.Time     `json:"admitted"`
}

// ServiceRecord is a service's failure history as stored.
type ServiceRecord struct {
	Name         string    `json:"name"`
	Failures     int       `json:"failures"`
	Unhealthy    bool      `json:"unhealthy,omitempty"`
	Reason       string    `json:"reason,omitempty"` // the last failure
	BackoffUntil time.Time `json:"backoff_until,omitzero"`
	// LastUsed is when a lease that used the service last ended, stored
	// for the services it orders (yieldable ones, which yield memory least
	// recently used first) so that the order survives a restart. Zero in
	// a record stored before it existed: least recently used, as before.
	LastUsed time.Time `json:"last_used,omitzero"`
}
