// Package timeline draws the run of a scenario (a scenario.Result) as an
// SVG timeline for people: a lane per service, probe and lease, with states
// as bands, ops as intervals from run to done, and failures, crashes,
// rejections and reaps as marks of distinct shapes with their reasons
// written out; a lane for the memory budget and one per pool show what is
// held against the capacity and who waits for how much, which is why a
// lease waits. Long idle gaps are compressed on the time axis (axis.go)
// and marked with a break sign. It reads the trace
// records only, never the world, so a drawing never changes a trace; and it
// is deterministic, byte for byte, for a given run.
//
// Only `svcsim run --svg` uses it, which is why it is not part of package
// scenario: checking scenarios needs no drawing.
package timeline
