package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/ids"
)

// Client talks to a svcrun over its socket. It is safe for concurrent use
// and keeps connections open between calls.
//
// Its errors keep what the server said: a rejected acquire is an
// *errdefs.RejectedError with the reason; other answers are an *Error that
// matches, with errors.Is, the errdefs error of its code
// (errdefs.ErrUnknownLease, ErrStopping, ErrNotFound, ...); a socket
// nobody answers on is an *UnreachableError with a hint, a connection lost
// before the answer a *LostError. Away says which errors a restart of
// svcrun causes.
type Client struct {
	socket string
	// A request takes an idle connection or dials one, and gives it back
	// once its answer is read: no goroutine runs between requests, so
	// that a command making one or two calls starts none (net/http's
	// Transport runs two per connection and dials in a third).
	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// UnreachableError is a socket svcrun could not be reached on.
type UnreachableError struct {
	Socket string
	Err    error // the connect error
}

func (e *UnreachableError) Error() string {
	cause := e.Err
	var op *net.OpError
	if errors.As(cause, &op) && op.Err != nil {
		cause = op.Err // "connect: no such file or directory"
	}
	hint := "is `svcrun serve` running? (the socket comes from --socket, else --config, else " +
		"$SVCRUN_SOCKET, else the default if it exists, else the svcrun serve started last)"
	if errors.Is(e.Err, os.ErrPermission) {
		hint = "only root and svcrun's own user may connect: run the command as one of them, e.g. with sudo"
	}
	return fmt.Sprintf("cannot reach svcrun at %s: %s (%v)", e.Socket, hint, cause)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// LostError is a request whose connection failed before the answer came:
// svcrun stopped or was killed meanwhile. Whether it was carried out is
// unknown; an acquire asked again with the same attempt gets the lease if
// it was admitted.
type LostError struct {
	Socket, Method, Path string
	Err                  error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("svcrun at %s: %s %s: %v (did svcrun stop?)", e.Socket, e.Method, e.Path, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// Away says err is svcrun being away, as while it restarts: its socket not
// answering, the connection lost before the answer, or svcrun stopping.
// Asking again once it is back may succeed; a refused permission is not
// away.
func Away(err error) bool {
	var ue *UnreachableError
	var le *LostError
	switch {
	case errors.Is(err, os.ErrPermission):
		return false
	case errors.As(err, &ue), errors.As(err, &le):
		return true
	}
	return errors.Is(err, errdefs.ErrStopping)
}

// Error is an error answer of the API.
type Error struct {
	Status  int    // HTTP status
	Code    string // ErrorBody.Code
	Message string
	Reason  string
	Field   string // a bad request's field
}

func (e *Error) Error() string { return e.Message }

// Is matches the errdefs error of the answer's code.
func (e *Error) Is(target error) bool {
	k := kindOf(e.Code)
	return k != nil && k == target
}

// Dial returns a client of the svcrun listening on socket, after checking
// that something accepts connections there. The connection that checked
// carries the first request.
func Dial(socket string) (*Client, error) {
	c := NewClient(socket)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.put(conn)
	return c, nil
}

// NewClient returns a client of socket without connecting yet.
func NewClient(socket string) *Client { return &Client{socket: socket} }

// maxIdle bounds the connections a client keeps open between calls: as
// many as it had requests in flight at once, up to this.
const maxIdle = 256

// conn is a connection to svcrun with the reader of its answers.
type conn struct {
	net.Conn
	br   *bufio.Reader
	read int64 // bytes read from the connection for the current request
}

// Read counts what the answer's reader takes from the connection: a
// reused connection that failed before any byte came was closed by
// svcrun while idle, and the request is made again on a new one.
func (cn *conn) Read(p []byte) (int, error) {
	n, err := cn.Conn.Read(p)
	cn.read += int64(n)
	return n, err
}

func (c *Client) dial(ctx context.Context) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{Socket: c.socket, Err: err}
	}
	cn := &conn{Conn: nc}
	cn.br = bufio.NewReader(cn)
	return cn, nil
}

// get returns an idle connection (reused true) or a new one.
func (c *Client) get(ctx context.Context) (cn *conn, reused bool, err error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		cn = c.idle[n-1]
		c.idle = c.idle[:n-1]
	}
	c.mu.Unlock()
	if cn != nil {
		return cn, true, nil
	}
	cn, err = c.dial(ctx)
	return cn, false, err
}

// put keeps cn for the next request, or closes it when enough are kept
// or the client is closed.
func (c *Client) put(cn *conn) {
	c.mu.Lock()
	if c.closed || len(c.idle) >= maxIdle || cn.br.Buffered() > 0 {
		c.mu.Unlock()
		cn.Close()
		return
	}
	c.idle = append(c.idle, cn)
	c.mu.Unlock()
}

// Close closes the idle connections; a request made after still works,
// on a connection of its own that it closes.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	for _, cn := range idle {
		cn.Close()
	}
	return nil
}

// exchange is one request and its answer on one connection.
type exchange struct {
	c       *Client
	cn      *conn
	resp    *http.Response
	unwatch func() bool // false: ctx ended and closed the connection
}

// maxDrain is how much of an answer's unread rest is read to keep its
// connection for the next request, rather than closing it.
const maxDrain = 256 << 10

// done ends an exchange whose answer was read: its connection goes back
// for the next request when the answer ended cleanly.
func (x *exchange) done() {
	keep := x.unwatch() && !x.resp.Close
	if keep {
		n, err := io.Copy(io.Discard, io.LimitReader(x.resp.Body, maxDrain+1))
		keep = err == nil && n <= maxDrain
	}
	if !keep {
		x.cn.Close()
	}
	x.resp.Body.Close()
	if keep {
		x.c.put(x.cn)
	}
}

// abort ends an exchange whose answer is not read to its end (a stream).
func (x *exchange) abort() {
	x.unwatch()
	x.cn.Close()
	x.resp.Body.Close() // its drain ends at once: the connection is closed
}

// roundTrip writes req on a connection and reads the answer's head. A
// connection kept from an earlier request that fails before any byte of
// the answer came was closed by svcrun meanwhile (idle too long, or
// svcrun restarted): the request goes again, once, on a new connection.
// Canceling ctx closes the connection, which svcrun takes as the client
// gone (a waiting acquire is withdrawn).
func (c *Client) roundTrip(ctx context.Context, req *http.Request, body []byte) (*exchange, error) {
	for {
		cn, reused, err := c.get(ctx)
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		x := &exchange{c: c, cn: cn, unwatch: context.AfterFunc(ctx, func() { cn.Close() })}
		cn.read = 0
		err = req.Write(cn)
		if err == nil {
			x.resp, err = http.ReadResponse(cn.br, req)
		}
		if err == nil {
			return x, nil
		}
		x.unwatch()
		cn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !reused || cn.read > 0 {
			return nil, err
		}
	}
}

// send makes a request and returns the exchange when its answer's status
// is 2xx; otherwise the error the body describes.
func (c *Client) send(ctx context.Context, method, path string, in any) (*exchange, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://svcrun"+path, nil)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	x, err := c.roundTrip(ctx, req, body)
	if err != nil {
		var ue *UnreachableError
		switch {
		case errors.As(err, &ue):
			return nil, ue
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		return nil, &LostError{Socket: c.socket, Method: method, Path: path, Err: err}
	}
	resp := x.resp
	if resp.StatusCode/100 == 2 {
		return x, nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	x.done()
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) != nil || eb.Error == "" {
		return nil, &Error{Status: resp.StatusCode, Code: CodeInternal,
			Message: fmt.Sprintf("svcrun at %s answered %s to %s %s: %s", c.socket, resp.Status,
				method, path, strings.TrimSpace(string(raw)))}
	}
	if eb.Code == CodeRejected {
		return nil, &errdefs.RejectedError{Reason: eb.Reason}
	}
	return nil, &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error, Reason: eb.Reason, Field: eb.Field}
}

// call makes a request and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	x, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer x.done()
	if err := json.NewDecoder(x.resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("svcrun at %s: %s %s: unreadable answer: %w", c.socket, method, path, err)
	}
	return nil
}

// Status returns svcrun's view.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.call(ctx, http.MethodGet, "/v1/status", nil, &st)
	return st, err
}

// NewAttemptID makes a new attempt id. A caller that may have to ask again
// (its answer lost to a restart of svcrun) makes it before the first
// acquire, so that every try names the same attempt.
func NewAttemptID() string { return ids.Attempt() }

// Acquire asks for a lease and waits for the answer (at most req.Wait, plus
// the time to answer). Canceling ctx withdraws the request. An empty
// req.Attempt gets a new attempt id (the grant names it); a caller that
// may ask again after a lost answer (a *LostError) makes its attempt id
// first, with NewAttemptID, and passes it every time.
func (c *Client) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	if req.Attempt == "" {
		req.Attempt = NewAttemptID()
	}
	var g Grant
	err := c.call(ctx, http.MethodPost, "/v1/leases", req, &g)
	return g, err
}

// Renew extends a lease's TTL.
func (c *Client) Renew(ctx context.Context, lease string) (Renewal, error) {
	var r Renewal
	err := c.call(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(lease)+"/renew", nil, &r)
	return r, err
}

// Release ends a lease.
func (c *Client) Release(ctx context.Context, lease string) error {
	var r Released
	return c.call(ctx, http.MethodDelete, "/v1/leases/"+url.PathEscape(lease), nil, &r)
}

// Doctor runs the probes again.
func (c *Client) Doctor(ctx context.Context) (Done, error) {
	var d Done
	err := c.call(ctx, http.MethodPost, "/v1/doctor", nil, &d)
	return d, err
}

// Reap runs a reap round and waits for its end: now, or, while a round
// runs, the next one, started when that one ends.
func (c *Client) Reap(ctx context.Context) (ReapResult, error) {
	var r ReapResult
	err := c.call(ctx, http.MethodPost, "/v1/reap", nil, &r)
	return r, err
}

// Reset clears the failures of service, named MODULE/NAME.
func (c *Client) Reset(ctx context.Context, service string) (Done, error) {
	mod, name, ok := strings.Cut(service, "/")
	if !ok || mod == "" || name == "" || strings.Contains(name, "/") {
		return Done{}, fmt.Errorf("service %q: name it MODULE/NAME, e.g. demo/kv (see svcrun status)", service)
	}
	var d Done
	err := c.call(ctx, http.MethodPost, "/v1/services/"+url.PathEscape(mod)+"/"+url.PathEscape(name)+"/reset", nil, &d)
	return d, err
}

// Processes lists the processes in a service's container (MODULE/NAME).
func (c *Client) Processes(ctx context.Context, service string) ([]Process, error) {
	mod, name, ok := strings.Cut(service, "/")
	if !ok || mod == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("service %q: name it MODULE/NAME, e.g. demo/kv (see svcrun status)", service)
	}
	var ps []Process
	err := c.call(ctx, http.MethodGet, "/v1/services/"+url.PathEscape(mod)+"/"+url.PathEscape(name)+"/processes", nil, &ps)
	return ps, err
}

// SetModuleEnabled enables or disables a module until the next reload or
// restart.
func (c *Client) SetModuleEnabled(ctx context.Context, module string, enabled bool) (Done, error) {
	verb := "disable"
	if enabled {
		verb = "enable"
	}
	var d Done
	err := c.call(ctx, http.MethodPost, "/v1/modules/"+url.PathEscape(module)+"/"+verb, nil, &d)
	return d, err
}

// Reload makes svcrun read its configuration again.
func (c *Client) Reload(ctx context.Context) (ReloadResult, error) {
	var r ReloadResult
	err := c.call(ctx, http.MethodPost, "/v1/reload", nil, &r)
	return r, err
}

// Metrics returns the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	x, err := c.send(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return "", err
	}
	defer x.done()
	b, err := io.ReadAll(x.resp.Body)
	return string(b), err
}

// EventStream is an open GET /v1/events.
type EventStream struct {
	x   *exchange
	dec *json.Decoder
}

// Events opens the event stream. It returns once svcrun has subscribed:
// the kept records q asks for come first, then every record from then on
// (unless q.NoFollow), but for a reader that falls more than 256 records
// behind: it gets a record of kind "lost" with the count instead (the
// journal has them all).
func (c *Client) Events(ctx context.Context, q EventsQuery) (*EventStream, error) {
	path := "/v1/events"
	if enc := q.Encode(); enc != "" {
		path += "?" + enc
	}
	x, err := c.send(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	return &EventStream{x: x, dec: json.NewDecoder(x.resp.Body)}, nil
}

// Next blocks for the next record. It fails when the stream ends (svcrun
// stopped, ctx done, or Close; io.EOF after the past of a NoFollow query).
func (s *EventStream) Next() (Record, error) {
	var r Record
	err := s.dec.Decode(&r)
	return r, err
}

// Close ends the stream.
func (s *EventStream) Close() error {
	s.x.abort()
	return nil
}

// Socket is the path of svcrun's socket the client talks to.
func (c *Client) Socket() string { return c.socket }
