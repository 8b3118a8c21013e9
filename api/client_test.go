package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
)

// fakeSvcrun answers on a unix socket, one connection at a time, from a
// single goroutine started before a test measures anything.
type fakeSvcrun struct {
	sock string
	// answers is how many requests a connection gets answered (0: all,
	// -1: none); the next one is read, then the connection closed
	// unanswered (svcrun closing an idle connection just as the request
	// came).
	answers int
	hold    bool          // read each request, answer none, wait for the client to go
	got     chan string   // each request's "METHOD PATH", as it is read
	gone    chan struct{} // a held request's client went away
	conns   atomic.Int32  // connections accepted
	done    chan struct{}
}

func startFake(t *testing.T, f *fakeSvcrun) *fakeSvcrun {
	t.Helper()
	f.sock = filepath.Join(t.TempDir(), "s.sock")
	f.got, f.gone, f.done = make(chan string, 64), make(chan struct{}, 64), make(chan struct{})
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			f.serve(conn)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-f.done
	})
	return f
}

func (f *fakeSvcrun) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		f.got <- req.Method + " " + req.URL.Path
		if f.hold {
			io.Copy(io.Discard, br) // until the client closes
			f.gone <- struct{}{}
			return
		}
		if f.answers != 0 && n > max(f.answers, 0) {
			return
		}
		body := `{"lease":"lease-1","attempt":"attempt-1","services":[],"node_id":"n",` +
			`"uses":{"services":[],"probes":[]}}` + "\n"
		io.WriteString(conn,
			"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	}
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestClientStartsNoGoroutine: a command that makes a few calls starts no
// goroutine for them and keeps one connection (net/http's Transport starts
// three for its first call: the dial, the connection's reader and
// writer, and each one wakes a thread).
func TestClientStartsNoGoroutine(t *testing.T) {
	f := startFake(t, &fakeSvcrun{})
	runtime.GC() // the GC's workers start at the first cycle: before counting
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := goroutinesCreated()
	c, err := Dial(f.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.Acquire(ctx, AcquireRequest{Attempt: "attempt-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(ctx, "lease-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "lease-1"); err != nil {
		t.Fatal(err)
	}
	after := goroutinesCreated()
	c.Close()
	if after != before {
		t.Errorf("Dial, Acquire, Renew, Release started %d goroutine(s), want none", after-before)
	}
	if n := f.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 calls one after the other, want 1", n)
	}
}

// TestClientConnections: a kept connection that svcrun closed meanwhile
// is replaced without the caller seeing it; a new connection that fails
// before its answer is a LostError (svcrun away); canceling the context
// closes the connection, which withdraws a waiting acquire.
func TestClientConnections(t *testing.T) {
	ctx := context.Background()
	t.Run("closed while idle", func(t *testing.T) {
		f := startFake(t, &fakeSvcrun{answers: 1})
		c, err := Dial(f.sock)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := c.Acquire(ctx, AcquireRequest{Attempt: "attempt-1"}); err != nil {
				t.Fatalf("acquire %d: %v", i+1, err)
			}
		}
		c.Close()
		if n := f.conns.Load(); n != 3 {
			t.Errorf("%d connections, want 3: each closed after its first answer", n)
		}
	})
	t.Run("lost on a new connection", func(t *testing.T) {
		f := startFake(t, &fakeSvcrun{answers: -1})
		c := NewClient(f.sock)
		_, err := c.Acquire(ctx, AcquireRequest{Attempt: "attempt-1"})
		var lost *LostError
		if !errors.As(err, &lost) || !Away(err) {
			t.Fatalf("acquire on a connection closed unanswered: %v, want a LostError", err)
		}
		if got := <-f.got; got != "POST /v1/leases" {
			t.Errorf("the fake read %q", got)
		}
		if len(f.got) != 0 {
			t.Errorf("asked again on a new connection: %d more request(s)", len(f.got))
		}
	})
	t.Run("canceled", func(t *testing.T) {
		f := startFake(t, &fakeSvcrun{hold: true})
		c := NewClient(f.sock)
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Acquire(cctx, AcquireRequest{Attempt: "attempt-1", Wait: Duration(3600e9)})
			errc <- err
		}()
		<-f.got
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled acquire: %v, want context.Canceled", err)
		}
		<-f.gone // the connection was closed: svcrun withdraws the acquire
	})
}
