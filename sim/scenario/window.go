package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// Window is the part of a run its trace shows (`window from=T
// service=MODULE/NAME`): a replayed incident plays everything from the
// boot, since the engine's state at T is made of all of it, but its trace
// is only about the window.
type Window struct {
	From    time.Duration
	Service string // "": every service
}

// parseWindow reads `window [from=T] [service=MODULE/NAME]`.
func (p *parser) parseWindow(line int, args []string) error {
	w := &Window{}
	for _, a := range parseKVs(args) {
		switch {
		case a.Key == "from" && !a.Flag:
			d, err := parseDuration(a.Value)
			if err != nil {
				return lineError(p.file, line, "window from=%s: %v", a.Value, err)
			}
			w.From = d
		case a.Key == "service" && !a.Flag:
			w.Service = a.Value
		default:
			return lineError(p.file, line, "window: unknown argument %q; usage: window [from=T] [service=MODULE/NAME]", a.Key)
		}
	}
	p.sc.Window, p.windowLine = w, line
	return nil
}

// filter keeps the boot line and the records of the window, and says how
// many lines before From it left out.
func (w *Window) filter(recs []Record) []Record {
	if w == nil || len(recs) == 0 {
		return recs
	}
	leases := map[engine.LeaseID]bool{}
	if w.Service != "" {
		for _, r := range recs {
			if a, ok := r.Effect.(engine.Admitted); ok && mentions(strings.Join(a.Services, " "), w.Service) {
				leases[a.Lease] = true
			}
		}
	}
	out := []Record{recs[0]}
	before := 0
	for _, r := range recs[1:] {
		switch {
		case w.Service != "" && !w.about(r, leases):
		case r.At < w.From:
			before++
		default:
			if before > 0 {
				out = append(out, Record{At: w.From, Kind: RecInput,
					Text: fmt.Sprintf("window: %d line(s) before this one not shown", before)})
				before = 0
			}
			out = append(out, r)
		}
	}
	return out
}

// about says whether a record is about the window's service: its ops,
// its events, its inputs, the leases it served, and restarts.
func (w *Window) about(r Record, leases map[engine.LeaseID]bool) bool {
	if r.Input != nil && r.Input.Name == "restart" {
		return true
	}
	var lease engine.LeaseID
	switch ev := r.Event.(type) {
	case engine.Acquire:
		lease = ev.Lease
	case engine.Release:
		lease = ev.Lease
	case engine.Renew:
		lease = ev.Lease
	}
	if r.Effect != nil {
		lease = engine.LeaseOf(r.Effect)
	}
	if lease != "" {
		return leases[lease]
	}
	return mentions(r.Text, w.Service)
}

// mentions says whether text names the service as a word: demo/kv, not
// demo/kv2.
func mentions(text, service string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], service)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(service)
		if (start == 0 || !nameChar(text[start-1])) && (end == len(text) || !nameChar(text[end])) {
			return true
		}
		i = start + 1
	}
}

func nameChar(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' ||
		c >= 'A' && c <= 'Z'
}
