// Package ids makes the random ids of leases and attempts, for the agent
// and for the API's clients, which must not link the agent to make one.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New is prefix followed by 16 random hex digits.
func New(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux, macOS or Windows
	}
	return prefix + hex.EncodeToString(b[:])
}

// Attempt makes a new attempt id. A caller that may have to ask again
// (its answer lost to a restart of svcrun) makes it before the first
// acquire, so that every try names the same attempt.
func Attempt() string { return New("attempt-") }
