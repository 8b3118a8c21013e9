// Package testhost gives tests host state of their own, so that no test
// leans on the machine it runs on: a node id that no other test, test
// process, checkout or user's svcrun has (svcrun names and locks its base
// cgroup after the node id), the removal of exactly the cgroups a test's
// svcrun left, and an unprivileged user for run_as that the tests create
// rather than borrow from the image. Only tests import it.
package testhost

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
)

var seq atomic.Int64

// NodeID is a node id for one svcrun of a test: prefix, the test
// process's pid, a sequence number within the process, and random bits,
// since a pid is reused (a base cgroup a killed test process left under
// the same pid would otherwise be adopted) and pid namespaces may share a
// cgroup tree.
func NodeID(prefix string) string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%d-%s", prefix, os.Getpid(), seq.Add(1), hex.EncodeToString(b))
}
