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
//     modules, next manifests for their reloads (lifecycles changing in
//     every direction, manual too; capabilities and pools moving to
//     another service, to a probe, to another module, or vanishing) and
//     at times a disabled module shadowing another's capability; one node
//     in six lives for days, idle for hours between uses. The history
//     mixes leases, crashes, silent deaths (also of frozen daemons, and
//     during boot fingerprints), fingerprints that fail, time out or
//     change mem_gb, pools and health, reloads, enables, disables,
//     removals, agent restarts, configurations edited while svcrun is
//     down (a restart that boots with modules removed, lifecycles changed,
//     pools moved, on the stored leases and service records) and reap
//     requests in bursts. The step checks: every service svcrun may act
//     on is watched (a running daemon is never taken as stopped, an
//     unknown one's fingerprint runs or is retried), no wanted start waits
//     for another service's op, every lease needs what offers what it
//     asked for now, tokens belong to the service that granted them, a
//     clean run forgets failures. The settled checks: nothing of a
//     disabled module runs or is charged, and no wanted service sits
//     stopped while its memory fits or idle yieldable services could make
//     room;
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
