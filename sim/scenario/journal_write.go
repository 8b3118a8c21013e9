package scenario

// Writing a replayed journal as a scenario file, and checking its run
// against the journal.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// plainID checks that an id can be written as one word of a scenario.
func plainID(id string) error {
	if id == "" || strings.ContainsAny(id, " \t\n#,=:") {
		return fmt.Errorf("%q: a scenario writes ids as one word without #, comma, = or colon", id)
	}
	return nil
}

func acquireText(a engine.Acquire) (string, error) {
	var b strings.Builder
	b.WriteString("acquire " + string(a.Lease))
	words := []string{string(a.Lease)}
	if a.Attempt != "" {
		fmt.Fprintf(&b, " attempt=%s", a.Attempt)
		words = append(words, a.Attempt)
	}
	if a.Job != "" {
		fmt.Fprintf(&b, " job=%s", a.Job)
		words = append(words, a.Job)
	}
	if len(a.Capabilities) > 0 {
		fmt.Fprintf(&b, " cap=%s", strings.Join(a.Capabilities, ","))
		words = append(words, a.Capabilities...)
	}
	if len(a.Pools) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range a.Pools {
				if !yield(n) {
					return
				}
			}
		})
		pools := make([]string, len(names))
		for i, n := range names {
			pools[i] = fmt.Sprintf("%s:%d", n, a.Pools[n])
		}
		fmt.Fprintf(&b, " pool=%s", strings.Join(pools, ","))
		words = append(words, names...)
	}
	if len(a.NeedsPools) > 0 {
		fmt.Fprintf(&b, " needs=%s", strings.Join(a.NeedsPools, ","))
		words = append(words, a.NeedsPools...)
	}
	for _, w := range words {
		if err := plainID(w); err != nil {
			return "", fmt.Errorf("acquire %s: %v", a.Lease, err)
		}
	}
	if a.Wait > 0 {
		fmt.Fprintf(&b, " wait=%v", a.Wait)
	}
	if a.TTL > 0 {
		fmt.Fprintf(&b, " ttl=%v", a.TTL)
	}
	return b.String(), nil
}

// write writes the scenario's head: node, modules, behaviours, window,
// timeline and run line.
func (c *converter) write(command string, first, last sim.JournalLine, skip int, win JournalWindow,
	until time.Duration) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# An incident replayed from svcrun's journal by\n#   %s\n", command)
	fmt.Fprintf(&b, "# from %s:%d (svcrun's boot at %s) to %s:%d.\n", first.File, first.Line,
		c.t0.UTC().Format(time.RFC3339Nano), last.File, last.Line)
	if skip > 0 {
		fmt.Fprintf(&b, "# The %d line(s) before that boot are left out: no state to replay them from.\n", skip)
	}
	b.WriteString("# Times are from that boot. The fakes do what svcrun's services did: each op\n")
	b.WriteString("# lasts what it lasted and ends as it ended, call by call.\n\n")
	cfg := c.cfg
	fmt.Fprintf(&b, "node id=%s platform=%s budget_gb=%v max_ops=%d status=%v fingerprint=%v reap=%v",
		cfg.NodeID, cfg.Platform, cfg.MemoryBudgetGB, cfg.MaxConcurrentOps, cfg.StatusPeriod, cfg.FingerprintPeriod,
		cfg.ReapPeriod)
	if cfg.WatchedStatusPeriod > 0 {
		fmt.Fprintf(&b, " watched_status=%v", cfg.WatchedStatusPeriod)
	}
	if cfg.ReapSweepPeriod > 0 {
		fmt.Fprintf(&b, " reap_sweep=%v", cfg.ReapSweepPeriod)
	}
	if cfg.ReadyPoll > 0 {
		fmt.Fprintf(&b, " ready_poll=%v", cfg.ReadyPoll)
	}
	if cfg.DoctorDebounce > 0 {
		fmt.Fprintf(&b, " debounce=%v", cfg.DoctorDebounce)
	}
	if cfg.ForceAfter > 0 {
		fmt.Fprintf(&b, " force_after=%d", cfg.ForceAfter)
	}
	if strings.ContainsAny(cfg.NodeID, " \t#") {
		return "", fmt.Errorf("node id %q: a scenario writes it as one word", cfg.NodeID)
	}
	b.WriteString("\n\n")
	for _, ms := range c.boot0 {
		if ms.Enabled {
			b.WriteString("module\n")
		} else {
			b.WriteString("module disabled\n")
		}
		writeModule(&b, ms.Module)
		b.WriteString("end\n\n")
	}
	for _, m := range c.later {
		b.WriteString("module later\n")
		writeModule(&b, m)
		b.WriteString("end\n\n")
	}
	for _, name := range slices.Sorted(mapKeys(c.allFakes())) {
		var head []string
		if c.runHead[name] {
			head = append(head, "running")
		}
		if fp, ok := c.fpHead[name]; ok && !fp.isDefault() {
			head = append(head, fp.args())
		}
		if len(head) > 0 {
			fmt.Fprintf(&b, "behaviour %s %s\n", name, strings.Join(head, " "))
		}
		for _, op := range protocol.Ops() {
			s := c.scripts[name][op]
			if s == nil {
				continue
			}
			fmt.Fprintf(&b, "behaviour %s op=%s duration=%s", name, op, s.durationList(until))
			if outs := s.outcomeList(); outs != "" {
				fmt.Fprintf(&b, " outcomes=%s", outs)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	if len(c.stored) > 0 {
		b.WriteString("# What svcrun's store held at the boot:\n")
		for _, s := range c.stored {
			b.WriteString(s + "\n")
		}
		b.WriteString("\n")
	}
	if win.From > 0 || win.Service != "" {
		b.WriteString("window")
		if win.From > 0 {
			fmt.Fprintf(&b, " from=%v", win.From)
		}
		if win.Service != "" {
			fmt.Fprintf(&b, " service=%s", win.Service)
		}
		b.WriteString("\n\n")
	}
	sort.SliceStable(c.inputs, func(i, j int) bool {
		a, b := c.inputs[i], c.inputs[j]
		return a.at < b.at || a.at == b.at && a.seq < b.seq
	})
	services := c.serviceNames()
	for _, in := range c.inputs {
		fmt.Fprintf(&b, "at %v %s", in.at, in.text)
		if in.service != "" && !slices.Contains(services, in.service) {
			b.WriteString(" unknown")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "run %v\n", until)
	return b.String(), nil
}

func (c *converter) allFakes() map[string]bool {
	out := map[string]bool{}
	for n := range c.scripts {
		out[n] = true
	}
	for n := range c.runHead {
		out[n] = true
	}
	for n := range c.fpHead {
		out[n] = true
	}
	return out
}

// durationList writes the durations of the calls; an op still in flight
// at the end (or lost in a restart) lasts past the scenario's end.
func (s *script) durationList(until time.Duration) string {
	ds := make([]string, len(s.durations))
	for i, d := range s.durations {
		if d < 0 {
			d = until + time.Hour
		}
		ds[i] = d.String()
	}
	if len(slices.Compact(slices.Clone(ds))) == 1 {
		return ds[0]
	}
	return strings.Join(ds, ",")
}

// outcomeList writes the outcomes of the calls, or "" when all are ok.
func (s *script) outcomeList() string {
	outs := make([]string, len(s.outcomes))
	all := true
	for i, o := range s.outcomes {
		outs[i] = string(o)
		all = all && o == fakes.OK
	}
	if all {
		return ""
	}
	// The last repeats: trailing copies of it say nothing.
	for len(outs) > 1 && outs[len(outs)-1] == outs[len(outs)-2] {
		outs = outs[:len(outs)-1]
	}
	return strings.Join(outs, ",")
}

// sameModules checks that the modules as written read back as the
// journal's: the engine must see the same manifests.
func (c *converter) sameModules(sc *Scenario) error {
	for i, m := range sc.Modules {
		if !sameManifest(m.Module, c.boot0[i].Module) {
			a, _ := json.Marshal(c.boot0[i].Module.Services)
			b, _ := json.Marshal(m.Module.Services)
			return fmt.Errorf("module %s as a scenario writes it reads back differently (a field the writer "+
				"lacks):\n  journal  %s\n  scenario %s", m.Module.Name, a, b)
		}
	}
	return nil
}

// compare checks the scenario's steps against the journal's, in order: the
// same events, the same decisions (timers compared without their times,
// which the simulator keeps on the dot).
func (c *converter) compare(got []engine.JournalEntry) error {
	for i, w := range c.want {
		if i >= len(got) {
			return unsayable(w, "the replayed scenario ends before this step (it made %d steps)", len(got))
		}
		g := got[i]
		we, ge := timeless(w.Entry.Effects), timeless(g.Effects)
		if g.Event != w.Entry.Event || !slices.Equal(we, ge) {
			return unsayable(w, "the replayed scenario does not reproduce this step: the journal recorded\n    %s: "+
				"%s\nthe scenario gives (at %v)\n    %s: %s",
				w.Entry.Event, strings.Join(we, "\n      "), g.At.Sub(sim.Epoch), g.Event, strings.Join(ge, "\n      "))
		}
	}
	return nil
}

// timeless drops the times of timer effects.
func timeless(effects []string) []string {
	out := make([]string, len(effects))
	for i, e := range effects {
		if strings.HasPrefix(e, "timer ") {
			if j := strings.LastIndex(e, " at "); j > 0 {
				e = e[:j]
			}
		}
		out[i] = e
	}
	return out
}
