package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
)

// TestAcquireBadRequests: every malformed or oversized acquire is a 400
// naming its field, with no long echo of what was sent, and nothing is
// admitted.
func TestAcquireBadRequests(t *testing.T) {
	n := startNode(t, demoModules(t))
	long := strings.Repeat("x", api.MaxName+1)
	huge := strings.Repeat("y", 1<<20)
	list := func(n int, name func(i int) string) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf("%q", name(i))
		}
		return "[" + strings.Join(l, ",") + "]"
	}
	manyPools := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf(`"p%d":1`, i)
		}
		return "{" + strings.Join(l, ",") + "}"
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"empty body", ``, "body"},
		{"null body", `null`, "body"},
		{"an array", `[]`, "body"},
		{"not JSON", `{`, "body"},
		{"trailing garbage", `{"attempt":"a1","capabilities":["kv"]} x`, "body"},
		{"two objects", `{"attempt":"a1"}{"attempt":"a2"}`, "body"},
		{"body over 64 KiB", `{"attempt":"` + strings.Repeat("z", 900<<10) + `"}`, "body"},
		{"1 MB capability", `{"attempt":"a1","capabilities":["` + huge + `"]}`, "body"},
		{"90,000 duplicate capabilities",
			`{"attempt":"a1","capabilities":` + list(90000, func(int) string { return "kv" }) + `}`, "body"},
		{"unknown field", `{"attempt":"a1","colour":"red"}`, "colour"},
		{"field twice", `{"attempt":"a1","attempt":"a2"}`, "attempt"},
		{"no attempt", `{"capabilities":["kv"]}`, "attempt"},
		{"attempt not a string", `{"attempt":5}`, "attempt"},
		{"attempt too long", `{"attempt":"` + long + `"}`, "attempt"},
		{"attempt with a line break", `{"attempt":"a\n1"}`, "attempt"},
		{"job too long", `{"attempt":"a1","job":"` + long + `"}`, "job"},
		{"job with a NUL", `{"attempt":"a1","job":"j\u0000"}`, "job"},
		{"duplicate capability", `{"attempt":"a1","capabilities":["kv","kv"]}`, "capabilities[1]"},
		{"empty capability", `{"attempt":"a1","capabilities":[""]}`, "capabilities[0]"},
		{"capability too long", `{"attempt":"a1","capabilities":["` + long + `"]}`, "capabilities[0]"},
		{"too many capabilities", `{"attempt":"a1","capabilities":` + list(api.MaxItems+1,
			func(i int) string { return fmt.Sprint("c", i) }) + `}`, "capabilities"},
		{"duplicate needs_pools", `{"attempt":"a1","needs_pools":["kv-slots","kv-slots"]}`, "needs_pools[1]"},
		{"no tokens", `{"attempt":"a1","pools":{"kv-slots":0}}`, "pools.kv-slots"},
		{"tokens not a number", `{"attempt":"a1","pools":{"kv-slots":"1"}}`, "pools.kv-slots"},
		{"pool twice", `{"attempt":"a1","pools":{"kv-slots":1,"kv-slots":2}}`, "pools.kv-slots"},
		{"pools null", `{"attempt":"a1","pools":null}`, "pools"},
		{"pool name too long", `{"attempt":"a1","pools":{"` + long + `":1}}`, "pools"},
		{"too many pools", `{"attempt":"a1","pools":` + manyPools(api.MaxItems+1) + `}`, "pools"},
		{"ttl of 1ns", `{"attempt":"a1","capabilities":["kv"],"ttl":"1ns"}`, "ttl"},
		{"negative ttl", `{"attempt":"a1","ttl":"-1s"}`, "ttl"},
		{"ttl too long", `{"attempt":"a1","ttl":"10000h"}`, "ttl"},
		{"ttl a number", `{"attempt":"a1","ttl":30}`, "ttl"},
		{"negative wait", `{"attempt":"a1","wait":"-1s"}`, "wait"},
		{"wait too long", `{"attempt":"a1","wait":"48h"}`, "wait"},
		{"wait not a duration", `{"attempt":"a1","wait":"soon"}`, "wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, eb, raw := rawCall(t, n.socket, "POST", "/v1/leases", tc.body)
			if code != http.StatusBadRequest || eb.Code != api.CodeBadRequest ||
				eb.Field != tc.field || !strings.Contains(eb.Error, tc.field) {
				t.Errorf("%d %s, want 400 bad_request naming field %s", code, cutForLog(raw), tc.field)
			}
			if len(raw) > 600 {
				t.Errorf("the answer is %d bytes: a bad value is echoed, not cut: %s", len(raw), cutForLog(raw))
			}
		})
	}
	st, err := n.c.Status(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 0 || len(st.LiveAttempts) != 0 {
		t.Errorf("bad requests left leases %+v, live attempts %v", st.Leases, st.LiveAttempts)
	}
}

func cutForLog(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestAcquireSameAttempt: an acquire repeated with the same attempt and
// requirements gets the same lease; other requirements are a 409 naming
// the lease the attempt holds.
func TestAcquireSameAttempt(t *testing.T) {
	n := startNode(t, demoModules(t))
	ctx := ctxT(t, 60*time.Second)
	req := api.AcquireRequest{Attempt: "attempt-same", Capabilities: []string{"kv"},
		Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(20 * time.Second), TTL: api.Duration(time.Minute)}
	g1, err := n.c.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := n.c.Acquire(ctx, req)
	if err != nil || g2.Lease != g1.Lease || g2.Attempt != req.Attempt || len(g2.Services) != 1 ||
		g2.Expires.Before(g1.Expires) {
		t.Fatalf("the same acquire again: %+v %v, want lease %s", g2, err, g1.Lease)
	}
	other := req
	other.Pools = map[string]int64{"kv-slots": 2}
	_, err = n.c.Acquire(ctx, other)
	var rej *errdefs.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, g1.Lease) || !strings.Contains(rej.Reason, "kv-slots:2") {
		t.Fatalf("another requirement under the same attempt: %v, want a rejection naming %s", err, g1.Lease)
	}
	st, err := n.c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 1 || st.Leases[0].ID != g1.Lease || st.Pools[0].Reserved != 1 {
		t.Errorf("leases %+v, pools %+v: want %s alone, 1 token", st.Leases, st.Pools, g1.Lease)
	}
	if err := n.c.Release(ctx, g1.Lease); err != nil {
		t.Fatal(err)
	}
}

// TestSlowBody: a body trickled after its headers is cut at the body
// timeout, with a 400 naming the body where the body is read (an acquire),
// and without holding the connection where it is not (it is discarded
// before the answer); an acquire whose body came at once waits for
// admission past that timeout.
func TestSlowBody(t *testing.T) {
	const timeout = 200 * time.Millisecond
	n := startNode(t, demoModules(t), WithBodyTimeout(timeout))
	ctx := ctxT(t, 60*time.Second)

	for _, tc := range []struct {
		path string
		code int
	}{{"/v1/leases", http.StatusBadRequest}, {"/v1/reap", http.StatusOK}} {
		conn, err := net.Dial("unix", n.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn,
			"POST %s HTTP/1.1\r\nHost: svcrun\r\nContent-Type: "+
				"application/json\r\nContent-Length: 100\r\n\r\n{", tc.path); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // a failure guard: the server answers at its timeout
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: a trickled body held its connection: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || !resp.Close {
			t.Errorf("%s with a trickled body: %s (close %v), want %d and the connection closed",
				tc.path, resp.Status, resp.Close, tc.code)
		}
	}

	hold, err := n.c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"kv-slots": 2},
		Wait: api.Duration(20 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		g, err := n.c.Acquire(ctx, api.AcquireRequest{Attempt: "attempt-long-poll",
			Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(50 * time.Second)})
		if err == nil {
			err = n.c.Release(ctx, g.Lease)
		}
		got <- err
	}()
	for waiting := false; !waiting; {
		st, err := n.c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range st.Leases {
			waiting = waiting || l.Attempt == "attempt-long-poll" && !l.Admitted
		}
	}
	// Not a synchronisation: the body deadline must pass while it waits.
	time.Sleep(3 * timeout)
	if err := n.c.Release(ctx, hold.Lease); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("an acquire waiting past the body timeout: %v", err)
	}
}
