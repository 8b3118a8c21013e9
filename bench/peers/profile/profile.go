//go:build peersprofile

// This file is not part of svcrun: bench/peers.sh compiles it into its
// svcrun (`go build -tags peersprofile -overlay`, as cmd/svcrun/
// zz_peersprofile.go) so that the benchmark can say what svcrun did in its
// idle window without a profiling endpoint in the product. When
// SVCRUN_PEERS_PROFILE names a socket path, it serves there:
//
//	/cpu?seconds=S  a CPU profile of the next S seconds
//	/heap           the heap profile after a GC (in use by allocation site)
//	/goroutine      the goroutines' stacks, counted by stack (debug=1 text)
//	/runtime        runtime/metrics' CPU classes (seconds since start: GC,
//	                scavenger, user, idle) and memory classes (bytes), and
//	                the goroutine count, one "name value" line each
//
// Without the variable it does nothing. runtime/pprof rather than
// net/http/pprof, whose index pulls html/template into the binary.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

func init() {
	path := os.Getenv("SVCRUN_PEERS_PROFILE")
	if path == "" {
		return
	}
	// Not inherited by the ops svcrun runs (they get their own
	// environment), nor by a svcrun started from this one.
	os.Unsetenv("SVCRUN_PEERS_PROFILE")
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "peersprofile: listen on %s: %v\n", path, err)
		os.Exit(70)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/cpu", func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
		if err != nil || secs <= 0 {
			http.Error(w, "seconds: a positive number", http.StatusBadRequest)
			return
		}
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		time.Sleep(time.Duration(secs * float64(time.Second)))
		pprof.StopCPUProfile()
	})
	mux.HandleFunc("/heap", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		pprof.Lookup("heap").WriteTo(w, 0) //nolint:errcheck // the client sees a short profile
	})
	mux.HandleFunc("/goroutine", func(w http.ResponseWriter, _ *http.Request) {
		pprof.Lookup("goroutine").WriteTo(w, 1) //nolint:errcheck // as above
	})
	mux.HandleFunc("/runtime", writeRuntime)
	go http.Serve(l, mux) //nolint:errcheck // ends with svcrun
}

func writeRuntime(w http.ResponseWriter, _ *http.Request) {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind != metrics.KindFloat64 && d.Kind != metrics.KindUint64 {
			continue
		}
		if strings.HasPrefix(d.Name, "/cpu/classes/") || strings.HasPrefix(d.Name, "/memory/classes/") ||
			strings.HasPrefix(d.Name, "/gc/cycles/") || d.Name == "/sched/goroutines:goroutines" ||
			d.Name == "/gc/gogc:percent" || d.Name == "/gc/gomemlimit:bytes" {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindFloat64:
			fmt.Fprintf(w, "%s %g\n", s.Name, s.Value.Float64())
		case metrics.KindUint64:
			fmt.Fprintf(w, "%s %d\n", s.Name, s.Value.Uint64())
		}
	}
}
