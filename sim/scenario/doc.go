// Package scenario owns the scenario language of scenarios/README.md: it
// parses a scenario file (Parse, ParseFile; every error names the file and
// the line), runs it in a sim.World (Scenario.Run) into a trace of inputs,
// events and effects (Result, Record), checks the trace against the
// expected one below the ---- line and renders the difference (CheckFile;
// the line diff lives here because only the check uses it), writes an
// exploration back as a scenario (Explored), and turns svcrun's event
// journal into a scenario that reproduces it step by step (FromJournal,
// journal*.go; it lives here, not in package sim, because it writes and
// runs scenarios). Package sim/timeline draws a Result as SVG.
//
// Each command of the language has one file: node.go, module.go,
// behaviour.go, stored.go, window.go, and one file per timeline input
// (acquire.go, crash.go, emptied.go, ...)
// holding its parsing and what it does to the world. parse.go holds the
// file structure and what every command shares.
//
// A trace is byte for byte the same on every run of the same file: scenario
// files are regression tests, and their traces change only with the
// engine's behaviour.
package scenario
