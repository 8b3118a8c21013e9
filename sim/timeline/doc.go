// Package timeline draws the run of a scenario (a scenario.Result) as an
// SVG timeline for people: a lane per service, probe and lease, with states
// as bands and failures, crashes and reaps as marks. It reads the trace
// records only, never the world, so a drawing never changes a trace; and it
// is deterministic, byte for byte, for a given run.
//
// Only `svcsim run --svg` uses it, which is why it is not part of package
// scenario: checking scenarios needs no drawing.
package timeline
