package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

const twoServices = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
capabilities = ["ca"]
pools = ["p", "q"]
[[services]]
name = "b"
exec = ["bin/b"]
lifecycle = "always"
capabilities = ["cb"]
`

const manyCapabilities = `
[module]
name = "c"
version = "1"
[[services]]
name = "many"
exec = ["bin/many"]
capabilities = ["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"]
`

const eightCapabilities = `
[module]
name = "c"
version = "1"
[[services]]
name = "eight"
exec = ["bin/eight"]
capabilities = ["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"]
`

const noOffers = `
[module]
name = "z"
version = "1"
[[services]]
name = "plain"
exec = ["bin/plain"]
`

// TestAcquireAnswers holds the acquire rules of docs/protocol.md and
// docs/decisions.md (Pools and admission, immediate rejections): a request names its lease
// and attempt, its wait and TTL are not negative, a reservation takes at
// least one token; what nobody offers is rejected at once, naming what is
// offered (at most eight names); an attempt holds one lease, and a request
// for something else under it is refused naming both requests. An
// admission names the services the lease uses, sorted by name, once each.
func TestAcquireAnswers(t *testing.T) {
	pools := func(p map[string]int64) Requirements { return Requirements{Pools: p} }
	tests := []struct {
		name    string
		tomls   []string
		acquire Acquire
		admit   []string // services, or nil for a rejection
		reason  string
	}{
		{name: "no wait, no TTL, ready service",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: caps("cb")}, admit: []string{"m/b"}},
		{name: "services sorted, once each",
			acquire: Acquire{Lease: "l2", Attempt: "a2",
				Requirements: Requirements{Capabilities: []string{"cb", "ca", "cb"}, NeedsPools: []string{"p"}}},
			admit: []string{"m/a", "m/b"}},
		{name: "one token is enough",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: pools(map[string]int64{"p": 1})},
			admit:   []string{"m/a"}},
		{name: "no lease id",
			acquire: Acquire{Attempt: "a2", Requirements: caps("ca")}, reason: "a lease needs an id"},
		{name: "lease id taken",
			acquire: Acquire{Lease: "l1", Attempt: "a2", Requirements: caps("ca")}, reason: "lease l1 already exists"},
		{name: "no attempt id",
			acquire: Acquire{Lease: "l2", Requirements: caps("ca")}, reason: "a lease needs an attempt id"},
		{name: "negative wait",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Wait: -time.Second, Requirements: caps("ca")},
			reason:  "wait and ttl must not be negative"},
		{name: "negative TTL",
			acquire: Acquire{Lease: "l2", Attempt: "a2", TTL: -time.Second, Requirements: caps("ca")},
			reason:  "wait and ttl must not be negative"},
		{name: "no token",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: pools(map[string]int64{"p": 0})},
			reason:  `pool "p": a reservation needs at least 1 token, got 0`},
		{name: "unknown capability",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: caps("cx")},
			reason:  `no module on this node offers capability "cx" (capabilities: ca, cb)`},
		{name: "unknown capability among many", tomls: []string{manyCapabilities},
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: caps("cx")},
			reason:  `no module on this node offers capability "cx" (capabilities: k1, k2, k3, k4, k5, k6, k7, k8, ...)`},
		{name: "unknown capability among eight", tomls: []string{eightCapabilities},
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: caps("cx")},
			reason:  `no module on this node offers capability "cx" (capabilities: k1, k2, k3, k4, k5, k6, k7, k8)`},
		{name: "no capability at all", tomls: []string{noOffers},
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: caps("cx")},
			reason:  `no module on this node offers capability "cx" (it offers no capabilities)`},
		{name: "no pool at all", tomls: []string{noOffers},
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: pools(map[string]int64{"q": 1})},
			reason:  `no module on this node offers pool "q" (it offers no pools)`},
		{name: "over two offers: the first in name order is named",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: pools(map[string]int64{"q": 5, "p": 5})},
			reason:  "pool p: needs 5 token(s), but m/a offers 2 in all (its latest fingerprint while running)"},
		{name: "unknown pool",
			acquire: Acquire{Lease: "l2", Attempt: "a2", Requirements: pools(map[string]int64{"x": 1})},
			reason:  `no module on this node offers pool "x" (pools: p, q)`},
		{name: "another request of the attempt",
			acquire: Acquire{Lease: "l2", Attempt: "a1", Job: "j2", TTL: time.Minute,
				Requirements: Requirements{Pools: map[string]int64{"p": 1}, NeedsPools: []string{"p"}}},
			reason: "attempt a1 already holds lease l1 for job=j1 cap=ca; this acquire asks for job=j2 pool=p:1 " +
				"needs=p ttl=1m0s: an attempt holds one lease, so release l1 first or use another attempt id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tomls := []string{twoServices}
			if tt.tomls != nil {
				tomls = tt.tomls
			}
			world := newAnswering()
			world.fp["m/a"] = protocol.Fingerprint{Healthy: true, Pools: map[string]int64{"p": 2, "q": 1}}
			r := rigSetup{world: world.carry}.boot(t, tomls...)
			if tt.tomls == nil {
				r.step(Acquire{Lease: "l1", Attempt: "a1", Job: "j1", Requirements: caps("ca")})
				if _, ok := r.answers["l1"].(Admitted); !ok {
					t.Fatalf("l1: %v\n%s", r.answers["l1"], r.history(0))
				}
			}
			r.step(tt.acquire)
			got := r.answers[tt.acquire.Lease]
			want := Effect(Rejected{Lease: tt.acquire.Lease, Reason: tt.reason})
			if tt.admit != nil {
				want = Admitted{Lease: tt.acquire.Lease, Services: tt.admit}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("answer %v, want %v\n%s", got, want, r.history(0))
			}
			if a, ok := got.(Admitted); ok && !slices.IsSorted(a.Services) {
				t.Errorf("admitted services %v, not sorted", a.Services)
			}
		})
	}
}

func caps(cs ...string) Requirements { return Requirements{Capabilities: cs} }
