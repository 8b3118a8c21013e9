//go:build !linux

package cgroup

import (
	"fmt"
	"runtime"
	"time"
)

// errNotAvailable is what every Manager method returns outside Linux.
var errNotAvailable = fmt.Errorf("cgroup v2 process containers: not available on %s", runtime.GOOS)

func unavailable() Support {
	why := errNotAvailable.Error()
	return Support{
		Containers: Feature{Reason: why}, Kill: Feature{Reason: why}, Freeze: Feature{Reason: why},
		Memory: Feature{Reason: why}, Pids: Feature{Reason: why}, MemberExits: Feature{Reason: why}}
}

// Probe reports that cgroups are not available on this platform.
func Probe() Support { return unavailable() }

// ProbeWith is Probe.
func ProbeWith(Options) Support { return unavailable() }

// Manager is the Linux process-container manager; elsewhere every method
// fails with "not available on <GOOS>" and svcrun uses process groups.
type Manager struct{}

// New returns a Manager whose Err says cgroups are not available here.
func New(Options) *Manager { return &Manager{} }

func (m *Manager) Support() Support                         { return unavailable() }
func (m *Manager) Err() error                               { return errNotAvailable }
func (m *Manager) Base() string                             { return "" }
func (m *Manager) SetOnEmptied(func(string))                {}
func (m *Manager) SetOnArmed(func(string))                  {}
func (m *Manager) SetOnMemberExited(func(string, bool))     {}
func (m *Manager) NoteChildExit(int, bool)                  {}
func (m *Manager) Members(string) []int                     { return nil }
func (m *Manager) Path(string) (string, error)              { return "", errNotAvailable }
func (m *Manager) Create(string) (int, error)               { return -1, errNotAvailable }
func (m *Manager) OpStart(string) (int, error)              { return -1, errNotAvailable }
func (m *Manager) OpEnd(string)                             {}
func (m *Manager) Recover(string) (int, error)              { return -1, nil }
func (m *Manager) Kill(string, time.Duration) error         { return errNotAvailable }
func (m *Manager) Strays(map[string]bool) ([]string, error) { return nil, nil }
func (m *Manager) Terminate(string, time.Duration) (bool, error) {
	return false, errNotAvailable
}
func (m *Manager) Freeze(string, time.Duration) error {
	return errNotAvailable
}
func (m *Manager) Thaw(string, time.Duration) error { return errNotAvailable }
func (m *Manager) Procs(string) ([]int, error)      { return nil, errNotAvailable }
func (m *Manager) Limits(string, float64, int64) (LimitsStatus, error) {
	return LimitsStatus{}, errNotAvailable
}
func (m *Manager) Status(string) (Status, bool) { return Status{}, false }
func (m *Manager) Services() []string           { return nil }
func (m *Manager) Remove(string) error          { return errNotAvailable }
func (m *Manager) Close() error                 { return nil }

// Locate says that cgroups are not available on this platform.
func Locate(Options) (Support, error) { return unavailable(), errNotAvailable }
