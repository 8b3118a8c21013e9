package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// leaseFake is a svcrun that admits every acquire at once, from one
// goroutine serving one connection at a time: a test counts the
// goroutines run starts, not the server's.
type leaseFake struct {
	sock    string
	renewed string // a file made at the first renewal
	release int    // the status of a release's answer (0: 200)
	got     chan string
}

func startLeaseFake(t *testing.T, f *leaseFake) *leaseFake {
	t.Helper()
	dir, err := os.MkdirTemp("", "lf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f.sock, f.renewed, f.got = filepath.Join(dir, "s.sock"), filepath.Join(dir, "renewed"), make(chan string, 1024)
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f.serve(conn)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return f
}

func (f *leaseFake) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		status, answer := http.StatusOK, any(api.Grant{Lease: "lease-1", Attempt: "attempt-1", NodeID: "n"})
		switch {
		case req.Method == http.MethodDelete:
			answer = api.Released{Lease: "lease-1"}
			if f.release != 0 {
				status, answer = f.release, api.ErrorBody{Error: "lease lease-1 is unknown", Code: api.CodeUnknownLease}
			}
		case strings.HasSuffix(req.URL.Path, "/renew"):
			answer = api.Renewal{Lease: "lease-1"}
			if err := os.WriteFile(f.renewed, nil, 0o644); err != nil {
				return
			}
		}
		f.got <- req.Method + " " + req.URL.Path
		b, _ := json.Marshal(answer)
		io.WriteString(conn,
			"HTTP/1.1 "+strconv.Itoa(status)+" "+http.StatusText(status)+
				"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+string(b))
	}
}

// runToFiles runs svcrun with stdout and stderr in files, so that CMD
// gets them as they are (a buffer would cost os/exec a goroutine
// copying), and returns the exit code and stderr.
func runToFiles(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(filepath.Join(t.TempDir(), "err"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	code := program.Run(context.Background(), &cli.Env{Stdout: out, Stderr: errf}, args)
	b, err := os.ReadFile(errf.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRunFastPathStartsOneGoroutine: a run admitted at once whose CMD
// ends before its first renewal starts one goroutine, the one forwarding
// signals to CMD: the progress reports and the renewals start theirs only
// when the first is due (each goroutine a short command starts wakes a
// thread, which costs more than the command's own work).
func TestRunFastPathStartsOneGoroutine(t *testing.T) {
	f := startLeaseFake(t, &leaseFake{})
	args := []string{"run", "--socket", f.sock, "--capability", "kv", "--", "true"}
	if code, errs := runToFiles(t, args...); code != 0 { // starts what a process starts once (os/signal's loop)
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	runtime.GC() // the GC's workers start at the first cycle: before counting
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := goroutinesCreated()
	code, errs := runToFiles(t, args...)
	after := goroutinesCreated()
	if code != 0 || errs != "" {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if n := after - before; n != 1 {
		t.Errorf("run -- true started %d goroutines, want 1 (forwarding signals)", n)
	}
}

// TestRunRenewsAndReportsRelease: with a short TTL the renewals come (CMD
// waits for the first, for 60 s at most: then it exits 9); a release
// refused is reported after CMD.
func TestRunRenewsAndReportsRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release int
		errs    string // stderr
	}{
		{name: "released", errs: ""},
		{name: "already ended", release: http.StatusNotFound,
			errs: "svcrun run: lease lease-1 had already ended when CMD exited (lease lease-1 is unknown)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startLeaseFake(t, &leaseFake{release: tc.release})
			code, errs := runToFiles(t, "run", "--socket", f.sock, "--ttl", "1s", "--", "sh", "-c",
				`i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -lt 1200 ] || exit 9; sleep 0.05; done`, "sh", f.renewed)
			if code != 0 || errs != tc.errs {
				t.Errorf("exit %d, stderr %q; want 0, %q", code, errs, tc.errs)
			}
			var got []string
			for len(f.got) > 0 {
				got = append(got, <-f.got)
			}
			if len(got) < 3 || got[0] != "POST /v1/leases" || got[1] != "POST /v1/leases/lease-1/renew" ||
				got[len(got)-1] != "DELETE /v1/leases/lease-1" {
				t.Errorf("requests %q, want an acquire, renewals, a release", got)
			}
		})
	}
}

// TestWaitsOnDaemon: every command is placed, so that a new one is too:
// the daemon's clients run with one P, the commands doing work of their
// own keep them all.
func TestWaitsOnDaemon(t *testing.T) {
	want := map[string]bool{
		"status": true, "events": true, "run": true, "acquire": true, "renew": true, "release": true, "doctor": true,
		"reap": true, "reset": true, "enable": true, "disable": true, "reload": true, "container": true,
		"validate": false, "op": false, "check": false, "serve": false, "sandbox": false, "version": false,
	}
	for name := range program.Commands {
		w, ok := want[name]
		if !ok {
			t.Errorf("command %s: say in this test whether it waits on the daemon", name)
			continue
		}
		if got := waitsOnDaemon(name); got != w {
			t.Errorf("waitsOnDaemon(%q) = %v, want %v", name, got, w)
		}
	}
}

// TestWhileAwaySaysOnlyWhenAway: what a retry does is made only when
// svcrun is away, once however many tries fail; a call answered at once
// makes nothing (the acquire's says a local time, and formatting one
// loads the time zone).
func TestWhileAwaySaysOnlyWhenAway(t *testing.T) {
	away := &api.LostError{Socket: "s", Method: "POST", Path: "/v1/leases", Err: io.EOF}
	for _, tc := range []struct {
		name   string
		fails  int // tries failing with svcrun away before one succeeds
		doings int
		notice string
	}{
		{name: "answered at once", fails: 0, doings: 0, notice: ""},
		{name: "away twice", fails: 2, doings: 1, notice: "svcrun run: svcrun went away (svcrun at s: POST /v1/leases: " +
			"EOF (did svcrun stop?)): asking again\nsvcrun run: svcrun is back\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w strings.Builder
			doings, tries := 0, 0
			err := whileAway(context.Background(), time.Time{}, newAwayNotice(cli.ForCommand("svcrun", "run", io.Discard, &w)),
				func() string {
					doings++
					return "asking again"
				}, func() error {
					if tries++; tries <= tc.fails {
						return away
					}
					return nil
				})
			if err != nil || doings != tc.doings || w.String() != tc.notice {
				t.Errorf("err %v, doing made %d times, said %q; want nil, %d, %q", err, doings, w.String(), tc.doings, tc.notice)
			}
		})
	}
}
