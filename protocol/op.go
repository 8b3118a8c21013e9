package protocol

import (
	"errors"
	"fmt"
	"time"

	"github.com/oarbank/svcrun/schemas"
)

// Op is one operation of service protocol 1: the first argument a service
// executable receives.
type Op string

// The seven ops. A probe implements only OpFingerprint.
const (
	OpFingerprint Op = "fingerprint"
	OpStart       Op = "start"
	OpStop        Op = "stop"
	OpStatus      Op = "status"
	OpReady       Op = "ready"
	OpListOwned   Op = "list_owned"
	OpDestroy     Op = "destroy"
)

// ErrUnknownOp is returned (wrapped) by ParseOp and Decode for a string that
// is not one of the seven ops.
var ErrUnknownOp = errors.New("unknown op")

// Ops lists the seven ops in the spec's order.
func Ops() []Op {
	return []Op{OpFingerprint, OpStart, OpStop, OpStatus, OpReady, OpListOwned, OpDestroy}
}

// ParseOp returns the op named s, exactly as it is spelled on the command
// line.
func ParseOp(s string) (Op, error) {
	if op := Op(s); op.Valid() {
		return op, nil
	}
	return "", fmt.Errorf("%w %q; ops: fingerprint, start, stop, status, ready, list_owned, destroy", ErrUnknownOp, s)
}

// Valid reports whether op is one of the seven ops.
func (op Op) Valid() bool {
	switch op {
	case OpFingerprint, OpStart, OpStop, OpStatus, OpReady, OpListOwned, OpDestroy:
		return true
	}
	return false
}

func (op Op) String() string { return string(op) }

// DefaultTimeout is the spec's timeout for op, or 0 for an unknown op. The
// manifest's start_timeout_s overrides OpStart's.
func DefaultTimeout(op Op) time.Duration {
	switch op {
	case OpFingerprint, OpStatus, OpReady, OpListOwned:
		return 5 * time.Second
	case OpStart, OpStop:
		return 120 * time.Second
	case OpDestroy:
		return 60 * time.Second
	}
	return 0
}

// Schema names the schema op's output must satisfy, or "" for an unknown op.
func (op Op) Schema() schemas.Name {
	switch op {
	case OpFingerprint:
		return schemas.Fingerprint
	case OpStart, OpStop, OpDestroy:
		return schemas.OpResult
	case OpStatus, OpReady:
		return schemas.Status
	case OpListOwned:
		return schemas.OwnedList
	}
	return ""
}

// Role says who ran an op: the rules differ for running in a fingerprint, and
// a probe implements no other op.
type Role uint8

const (
	// RoleService is the zero value so that a forgotten role gets the
	// stricter rules.
	RoleService Role = iota
	RoleProbe
)

func (r Role) String() string {
	switch r {
	case RoleService:
		return "service"
	case RoleProbe:
		return "probe"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}
