// Package sim is the simulated world: the real engine and driver loop on
// virtual time, with the fake executor (package fakes) and an in-memory
// store.
//
// It owns:
//   - World: one simulated node (New, Build, Boot, Do, RunFor, Restart),
//     deterministic for a given configuration and behaviours;
//   - Explore: a random node and history from a seed, every safety
//     invariant checked after every step and effect and the settled node
//     after every input, then a liveness phase (the same generator and
//     invariants drive the property tests). The node has one to three
//     modules, next manifests for their reloads and at times a disabled
//     module shadowing another's capability; the history mixes leases,
//     crashes, silent deaths (also of frozen daemons), fingerprints that
//     change mem_gb and pools, reloads, enables, disables, removals and
//     agent restarts. The settled checks: nothing of a disabled module
//     runs or is charged, and no wanted service sits stopped while its
//     memory fits or idle yieldable services could make room;
//     ExploreSeeds runs many on several goroutines and reports them in
//     seed order (explorations share nothing, so a seed gives the same
//     result alone or among others), and ShardSeeds splits a run's seeds;
//   - Workload, the generated large-node benchmark;
//   - ReadJournal, which reads an svcrun event journal (a file, or the
//     journal directory with its rotated files, oldest first), and Replay
//     and ReplayLines, which re-run it and report divergence.
//
// It does not read or write scenario files: package sim/scenario owns the
// scenario language and its traces, and builds on World. Nothing here
// touches the clock or the network; only ReadJournal reads files.
package sim
