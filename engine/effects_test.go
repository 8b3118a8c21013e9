package engine

import (
	"regexp"
	"testing"
)

// TestEffectNames: every effect has its own name, one lower-case word or
// words joined by dashes, which logs and the event stream show as its kind.
func TestEffectNames(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	tests := []struct {
		effect Effect
		name   string
	}{
		{RunOp{}, "run"},
		{SetTimer{}, "set-timer"},
		{CancelTimer{}, "cancel-timer"},
		{Kill{}, "kill"},
		{Freeze{}, "freeze"},
		{Thaw{}, "thaw"},
		{Admitted{}, "admitted"},
		{AlreadyHeld{}, "already-held"},
		{Rejected{}, "rejected"},
		{Expired{}, "expired"},
		{Renewed{}, "renewed"},
		{Released{}, "released"},
		{LeaseUnknown{}, "lease-unknown"},
		{PutLease{}, "put-lease"},
		{DeleteLease{}, "delete-lease"},
		{PutService{}, "put-service"},
		{Note{}, "note"},
		{ReapDone{}, "reap-done"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := tt.effect.EffectName()
		if got != tt.name || !word.MatchString(got) {
			t.Errorf("%T: EffectName %q, want %q", tt.effect, got, tt.name)
		}
		if seen[got] {
			t.Errorf("%T: EffectName %q is another effect's too", tt.effect, got)
		}
		seen[got] = true
	}
}
