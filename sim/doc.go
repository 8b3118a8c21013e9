// Package sim is the simulated world: the real engine and driver loop on
// virtual time, with the fake executor (package fakes) and an in-memory
// store.
//
// It owns:
//   - World: one simulated node (New, Build, Boot, Do, RunFor, Restart),
//     deterministic for a given configuration and behaviours;
//   - Invariants: the safety rules checked after every step and effect;
//   - random nodes and histories (GenNode, Actor, Draw) and Explore, which
//     runs them with every invariant and a liveness phase;
//   - Workload, the generated large-node benchmark;
//   - Replay, which re-runs an svcrun event journal and reports divergence.
//
// It does not read or write scenario files: package sim/scenario owns the
// scenario language and its traces, and builds on World. Nothing here
// touches the clock, the network or the file system.
package sim
