// Package errdefs holds the errors that cross svcrun's API: the daemon
// returns them, one table in package api gives each its HTTP status and
// code (api.Answer), and the API's client gives them back to its callers,
// who tell them apart with errors.Is and errors.As. It links nothing of
// the daemon, so a client does not either.
package errdefs

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is a service or module svcrun does not have; a
// *NotFoundError says which.
var ErrNotFound = errors.New("not found")

// ErrUnknownLease is a renew or release of a lease svcrun does not hold.
var ErrUnknownLease = errors.New("no such lease (never admitted, released, or expired)")

// ErrStopping is returned to requests that arrive while svcrun stops.
var ErrStopping = errors.New("svcrun is stopping")

// ErrRejected is a lease that was not admitted; a *RejectedError has the
// engine's reason.
var ErrRejected = errors.New("rejected")

// ErrFull is the data dir full: new and renewed leases wait for space.
// package store returns it (store.ErrFull).
var ErrFull = errors.New("the data dir is full")

// ErrUnlinked is the state file or its log deleted or replaced under a
// running svcrun: every request that needs a write is refused until
// svcrun restarts. package store returns it (store.ErrUnlinked).
var ErrUnlinked = errors.New("the state file is no longer linked where svcrun opened it")

// ErrInvalid is a request refused before the agent saw it (a bad field).
var ErrInvalid = errors.New("bad request")

// ErrRefused is a reload the agent refused: the running configuration
// stays.
var ErrRefused = errors.New("refused")

// NotFoundError names what was asked for and what there is.
type NotFoundError struct {
	Kind  string   // "service", "module"
	Name  string   // what was asked for
	Known []string // the names there are, sorted
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no such %s %q; %ss: %s", e.Kind, e.Name, e.Kind, strings.Join(e.Known, ", "))
}

// Is makes a NotFoundError match ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// RejectedError is a lease that was not admitted, with the engine's reason.
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string { return "rejected: " + e.Reason }

// Is makes a RejectedError match ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// LeaseEndedError is a renew or release of a lease that svcrun ended
// itself, the first time its holder asks: Reason says why (its module was
// removed from the configuration). It matches ErrUnknownLease.
type LeaseEndedError struct{ Reason string }

func (e *LeaseEndedError) Error() string { return "the lease has ended: " + e.Reason }

// Is makes a LeaseEndedError an unknown lease for errors.Is.
func (e *LeaseEndedError) Is(target error) bool { return target == ErrUnknownLease }

// ErrForbidden is a request the node's owner did not approve (a container
// of an image no enabled module was approved for); a *ForbiddenError
// says what is approved.
var ErrForbidden = errors.New("forbidden")

// ErrConflict is a request that the lease's state refuses (more
// containers than its tokens); a *ConflictError says why.
var ErrConflict = errors.New("conflict")

// ErrUnavailable is a request that a service svcrun depends on could not
// answer (the container runtime unreachable).
var ErrUnavailable = errors.New("unavailable")

// ForbiddenError is a request refused by the owner's approvals.
type ForbiddenError struct{ Reason string }

func (e *ForbiddenError) Error() string { return "forbidden: " + e.Reason }

// Is makes a ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// ConflictError is a request refused by the state of what it names.
type ConflictError struct{ Reason string }

func (e *ConflictError) Error() string { return e.Reason }

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
