package agent

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcRoom is how much the heap may grow between two collections at least.
// svcrun's live heap goes from 1-3 MiB on a node of a few services to 6-9
// MiB at 1,000. Go's default (GOGC 100: room for as much as the live heap,
// the heap never under 4 MiB) collects dozens of times a second under API
// load on a small one, and each collection on a 2-core node delays the
// requests it overlaps (API acquire+release p99 0.8-0.9 ms at GOGC 100,
// 0.5-0.6 ms at 200); a fixed GOGC 200 on a large one keeps a third of
// svcrun's memory as room (PSS 35-42 MB at 1,000 services, 29-33 MB at
// 100). So the room is max(live, gcRoom): GOGC 200 up to a live heap of
// 2 MiB, falling to 100 at 4 MiB and above.
const gcRoom = 4 << 20

// gcPercentFor is the GOGC that gives a live heap of live bytes its room:
// 100 x gcRoom / live, between 100 and 200. Above 200 Go's own minimum
// heap (4 MiB x GOGC/100) would outgrow the room.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 200
	}
	p := (100*gcRoom + live - 1) / live
	return int(min(max(p, 100), 200))
}

// gcTunePeriod is how often TuneGC reads the live heap: it moves with
// the services a node holds, over seconds at the fastest (a boot).
const gcTunePeriod = 10 * time.Second

// TuneGC keeps the collector's GOGC at gcPercentFor the live heap, as
// `svcrun serve` runs unless GOGC is set, until stop is called, which puts
// back the GOGC it found. It sets it once before it returns.
func TuneGC() (stop func()) {
	prev := debug.SetGCPercent(100) // read it: GOGC has no getter
	debug.SetGCPercent(prev)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := -1
	tune := func() {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if p := gcPercentFor(s[0].Value.Uint64()); p != last {
			debug.SetGCPercent(p)
			last = p
		}
	}
	tune()
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(gcTunePeriod)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				tune()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended // no tune after the setting is put back
		debug.SetGCPercent(prev)
	}
}
