//go:build linux

// Command idle is bench/peers.sh's account of svcrun's idle window: what
// ran in it, how often and at what CPU, so that two runs on two machines
// compare line by line.
//
//	idle get SOCKET PATH          GET PATH from an HTTP server on a unix
//	                              socket (svcrun's API, or the profile
//	                              socket of a svcrun built with
//	                              bench/peers/profile), body to stdout
//	idle ops BEFORE AFTER OPCPU SECONDS
//	                              the ops of the window, by kind: the
//	                              difference of two /metrics scrapes'
//	                              svcrun_op_duration_seconds counts and
//	                              sums, and the CPU of each op's own
//	                              process from OPCPU, the lines "OP NS" the
//	                              module's ops appended in the window
//	idle runtime BEFORE AFTER SECONDS
//	                              svcrun's Go runtime over the window, from
//	                              two /runtime answers: GC, scavenger and
//	                              user CPU, GC cycles, goroutines, heap
//	idle split TRACES SECONDS     a CPU profile (`go tool pprof -traces`)
//	                              summed by what svcrun was doing (split)
//
// Every line it prints starts with "idle:" and a fixed label, one thing per
// line, so that two runs' outputs diff.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) == 3 && args[0] == "get":
		err = get(args[1], args[2])
	case len(args) == 5 && args[0] == "ops":
		err = ops(os.Stdout, args[1], args[2], args[3], args[4])
	case len(args) == 4 && args[0] == "runtime":
		err = runtimeReport(os.Stdout, args[1], args[2], args[3])
	case len(args) == 3 && args[0] == "split":
		err = split(os.Stdout, args[1], args[2])
	default:
		err = fmt.Errorf("usage: idle get SOCKET PATH | ops BEFORE AFTER OPCPU SECONDS | runtime BEFORE AFTER SECONDS | " +
			"split TRACES SECONDS")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
}

func get(socket, path string) error {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	resp, err := c.Get("http://svcrun" + path)
	if err != nil {
		return fmt.Errorf("get %s on %s: %w", path, socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("get %s on %s: %s: %s", path, socket, resp.Status, strings.TrimSpace(string(b)))
	}
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		return fmt.Errorf("get %s on %s: %w", path, socket, err)
	}
	return nil
}

func seconds(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("window %q: not a positive number of seconds", s)
	}
	return v, nil
}

// opStat is one op kind's count and summed duration, from the histogram
// svcrun_op_duration_seconds, over every outcome.
type opStat struct {
	count, sum float64
	failed     float64 // outcomes other than ok
}

func scrape(path string) (map[string]*opStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("metrics scrape: %w", err)
	}
	defer f.Close()
	m := map[string]*opStat{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var field string
		switch {
		case strings.HasPrefix(line, "svcrun_op_duration_seconds_count{"):
			field = "count"
		case strings.HasPrefix(line, "svcrun_op_duration_seconds_sum{"):
			field = "sum"
		default:
			continue
		}
		op, outcome := label(line, "op"), label(line, "outcome")
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if op == "" || err != nil {
			return nil, fmt.Errorf("metrics scrape %s: cannot read %q", path, line)
		}
		s := m[op]
		if s == nil {
			s = &opStat{}
			m[op] = s
		}
		if field == "count" {
			s.count += v
			if outcome != "ok" {
				s.failed += v
			}
		} else {
			s.sum += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics scrape %s: %w", path, err)
	}
	return m, nil
}

func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

func ops(w io.Writer, before, after, opcpu, window string) error {
	secs, err := seconds(window)
	if err != nil {
		return err
	}
	b, err := scrape(before)
	if err != nil {
		return err
	}
	a, err := scrape(after)
	if err != nil {
		return err
	}
	cpu := map[string][]float64{}
	if f, err := os.Open(opcpu); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) != 2 {
				continue // a line cut by the window's end
			}
			ns, err := strconv.ParseFloat(fs[1], 64)
			if err != nil {
				continue
			}
			cpu[fs[0]] = append(cpu[fs[0]], ns/1e3)
		}
		f.Close()
	}
	kinds := make([]string, 0, len(a))
	for k := range a {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "idle: ops in %.0f s, by kind: count, a second, failed, wall ms each (svcrun's metrics), "+
		"CPU us each of the op's process (p50, mean; n)\n", secs)
	var total, totalCPU float64
	for _, k := range kinds {
		n := a[k].count
		wall := a[k].sum
		failed := a[k].failed
		if s := b[k]; s != nil {
			n -= s.count
			wall -= s.sum
			failed -= s.failed
		}
		us := cpu[k]
		if n == 0 && len(us) == 0 {
			continue
		}
		total += n
		p50, mean := "-", "-"
		if len(us) > 0 {
			sort.Float64s(us)
			var s float64
			for _, v := range us {
				s += v
			}
			totalCPU += s
			p50 = fmt.Sprintf("%.0f", us[(len(us)-1)/2])
			mean = fmt.Sprintf("%.0f", s/float64(len(us)))
		}
		ms := 0.0
		if n > 0 {
			ms = 1e3 * wall / n
		}
		fmt.Fprintf(w, "idle: op %-12s %6.0f  %7.3f/s  failed %-4.0f  wall %6.2f ms  CPU %s us p50, %s us mean; n %d\n",
			k, n, n/secs, failed, ms, p50, mean, len(us))
	}
	fmt.Fprintf(w, "idle: ops total    %6.0f  %7.3f/s  their processes' CPU %.3f %% of a core\n",
		total, total/secs, 100*totalCPU/1e6/secs)
	return nil
}

func readRuntime(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("runtime metrics: %w", err)
	}
	defer f.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 2 {
			continue
		}
		if v, err := strconv.ParseFloat(fs[1], 64); err == nil {
			m[fs[0]] = v
		}
	}
	return m, sc.Err()
}

func runtimeReport(w io.Writer, before, after, window string) error {
	secs, err := seconds(window)
	if err != nil {
		return err
	}
	b, err := readRuntime(before)
	if err != nil {
		return err
	}
	a, err := readRuntime(after)
	if err != nil {
		return err
	}
	pct := func(name string) float64 { return 100 * (a[name] - b[name]) / secs }
	// The runtime's own estimates, updated at each GC: the GC's count its
	// idle mark workers, which run only on otherwise idle CPUs, so they are
	// above the profile's GC share; the user class is no CPU time at all.
	fmt.Fprintf(w, "idle: go runtime CPU %% of a core (its estimates): GC %.3f (assist %.3f, background %.3f, "+
		"pause %.3f), scavenger %.3f\n",
		pct("/cpu/classes/gc/total:cpu-seconds"),
		pct("/cpu/classes/gc/mark/assist:cpu-seconds"),
		pct("/cpu/classes/gc/mark/dedicated:cpu-seconds")+pct("/cpu/classes/gc/mark/fractional:cpu-seconds")+
			pct("/cpu/classes/gc/mark/idle:cpu-seconds"),
		pct("/cpu/classes/gc/pause:cpu-seconds"), pct("/cpu/classes/scavenge/total:cpu-seconds"))
	fmt.Fprintf(w, "idle: go runtime GC cycles %.0f (%.3f/s), GOGC %.0f, goroutines %.0f -> %.0f\n",
		a["/gc/cycles/total:gc-cycles"]-b["/gc/cycles/total:gc-cycles"],
		(a["/gc/cycles/total:gc-cycles"]-b["/gc/cycles/total:gc-cycles"])/secs,
		a["/gc/gogc:percent"], b["/sched/goroutines:goroutines"], a["/sched/goroutines:goroutines"])
	mb := func(name string) float64 { return a[name] / 1e6 }
	fmt.Fprintf(w, "idle: go runtime memory MB at the end: heap objects %.2f, heap free %.2f, released %.2f, "+
		"unused %.2f, stacks %.2f, metadata %.2f, other %.2f, total %.2f\n",
		mb("/memory/classes/heap/objects:bytes"), mb("/memory/classes/heap/free:bytes"),
		mb("/memory/classes/heap/released:bytes"),
		mb("/memory/classes/heap/unused:bytes"),
		mb("/memory/classes/heap/stacks:bytes")+mb("/memory/classes/os-stacks:bytes"),
		mb("/memory/classes/metadata/other:bytes")+mb("/memory/classes/metadata/mspan/inuse:bytes")+
			mb("/memory/classes/metadata/mcache/inuse:bytes")+mb("/memory/classes/metadata/mspan/free:bytes")+
			mb("/memory/classes/metadata/mcache/free:bytes"),
		mb("/memory/classes/other:bytes")+mb("/memory/classes/profiling/buckets:bytes"), mb("/memory/classes/total:bytes"))
	return nil
}

// roles name what a CPU sample of svcrun was doing, by the first frame,
// from the leaf up, that matches one of them; the order matters: GC work
// done by an allocating goroutine is the GC's. A sample none matches is
// the runtime's own (scheduler, sysmon, timers, netpoll).
var roles = []struct{ name, match string }{
	{"GC", "runtime.gcBgMarkWorker"},
	{"GC", "runtime.gcAssistAlloc"},
	{"GC", "runtime.bgsweep"},
	{"GC", "runtime.bgscavenge"},
	{"GC", "runtime.gcStart"},
	{"snapshot", ".snapshot"},
	{"snapshot", ".Snapshot"},
	{"metrics", "WriteMetrics"},
	{"reaper", "executor.(*reaper)"},
	{"reaper", "executor.reapOrphans"},
	{"reaper", "executor.startReap"},
	{"op spawn and wait", "executor.runNative"},
	{"op spawn and wait", "executor.Run"},
	{"op spawn and wait", "sandbox."},
	{"executor other", "svcrun/executor."},
	{"cgroup events and pidfds", "svcrun/cgroup."},
	{"store and journal", "svcrun/store."},
	{"store and journal", "svcrun/agent.(*journal"},
	{"engine loop", "svcrun/engine."},
	{"engine loop", "svcrun/agent."},
	{"api", "svcrun/api"},
	{"svcrun other", "github.com/oarbank/svcrun/"},
}

func split(w io.Writer, traces, window string) error {
	secs, err := seconds(window)
	if err != nil {
		return err
	}
	f, err := os.Open(traces)
	if err != nil {
		return fmt.Errorf("profile traces: %w", err)
	}
	defer f.Close()
	got := map[string]time.Duration{}
	var total time.Duration
	var value time.Duration
	var frames []string
	flush := func() {
		if value == 0 {
			return
		}
		role := "go runtime (scheduler, sysmon, timers, netpoll)"
	find:
		for _, fr := range frames {
			for _, r := range roles {
				if strings.Contains(fr, r.match) {
					role = r.name
					break find
				}
			}
		}
		got[role] += value
		total += value
		value, frames = 0, frames[:0]
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			continue
		}
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		// A trace's first line is "VALUE FRAME"; the next ones "FRAME".
		if d, err := time.ParseDuration(fs[0]); err == nil && len(fs) >= 2 && value == 0 && len(frames) == 0 {
			value = d
			frames = append(frames, fs[1])
			continue
		}
		if value != 0 {
			frames = append(frames, fs[0])
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("profile traces: %w", err)
	}
	names := make([]string, 0, len(got))
	for k := range got {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return got[names[i]] > got[names[j]] })
	fmt.Fprintf(w, "idle: svcrun's own CPU by what it did (profile, %.0f s): %.3f %% of a core in samples\n",
		secs, 100*total.Seconds()/secs)
	for _, k := range names {
		fmt.Fprintf(w, "idle: own %-48s %7.3f %% of a core  %5.1f %% of the samples\n",
			k, 100*got[k].Seconds()/secs, 100*float64(got[k])/float64(max(total, 1)))
	}
	return nil
}
