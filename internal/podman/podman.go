// Package podman is a small client of podman's libpod REST API (as served
// by `podman system service` 4.3.1, Debian 12's), holding only what the
// container broker uses: create, start, inspect, list by label, wait, logs,
// stop, remove, and the images it needs (exists, pull, import).
//
// Each request goes on a connection of its own to the Unix socket, closed
// when its answer is read: a broker makes few requests, and a connection
// never outlives the request that made it (a restart of the runtime's API
// service costs nothing). docs/decisions.md says why this and not a
// runtime's own client library.
package podman

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
	"strings"
	"time"
)

// apiVersion is the libpod API the paths name: the one of Debian 12's
// podman. Later versions serve it too.
const apiVersion = "v4.3.1"

// ErrNotFound is what errors.Is finds in the error of a request about a
// container or an image the runtime does not know.
var ErrNotFound = errors.New("not found")

// APIError is an answer of the runtime other than 2xx that is not a "not
// found".
type APIError struct {
	Status  int
	Message string
	// Cause is libpod's short cause ("no such container", "image not
	// known"); it tells a missing image from other failures of a create,
	// which libpod answers with 500.
	Cause string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("podman answered %d: %s", e.Status, e.Message)
}

// notFoundCauses are libpod's causes of an answer about something missing,
// whatever its status: a create naming an unknown image is a 500.
var notFoundCauses = []string{"no such container", "no such image", "image not known", "no such pod"}

// Is makes errors.Is(err, ErrNotFound) hold for a 404 and for the answers
// whose cause says that the container or image is missing.
func (e *APIError) Is(target error) bool {
	if target != ErrNotFound {
		return false
	}
	if e.Status == http.StatusNotFound {
		return true
	}
	for _, c := range notFoundCauses {
		if e.Cause == c {
			return true
		}
	}
	return false
}

// UnreachableError is a socket nothing answers on.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf(
		"podman's API service is not running at %s (start it with `podman system service --time=0 unix://%s`, or enable "+
			"podman.socket): %v", e.Socket, e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Client talks to the libpod API on one Unix socket.
type Client struct {
	socket string
}

// New returns a client of the API service listening on socket; it does not
// connect until the first request.
func New(socket string) *Client { return &Client{socket: socket} }

// request is one request of the API: its path under /vX/libpod (escaped), query,
// JSON body or raw body with its content type.
type request struct {
	method      string
	path        string
	query       url.Values
	json        any
	body        io.Reader
	contentType string
}

// response is a 2xx answer whose body the caller reads, then closes
// (closing the connection).
type response struct {
	*http.Response
	conn net.Conn
	stop func() bool
}

func (r *response) close() {
	r.stop()
	r.conn.Close()
	r.Body.Close()
}

// exitRace says whether msg is libpod 4.3's answer to a request about a
// container whose process ended while podman read its cgroup (podman's
// issue 16383, fixed in 4.4): "read /proc/PID/cgroup: no such process",
// or "open" and "no such file or directory". The container exists, and
// podman sees it ended the next time it looks.
func exitRace(msg string) bool {
	rest, ok := strings.CutPrefix(msg, "read /proc/")
	if !ok {
		if rest, ok = strings.CutPrefix(msg, "open /proc/"); !ok {
			return false
		}
	}
	pid, cause, ok := strings.Cut(rest, "/cgroup: ")
	if !ok || pid == "" || strings.Trim(pid, "0123456789") != "" {
		return false
	}
	return cause == "no such process" || cause == "no such file or directory"
}

// raceRetries bounds the requests sent again after an exitRace answer.
const raceRetries = 4

// do sends r on a new connection and returns the answer when it is 2xx
// (or one of ok); otherwise the *APIError it describes. A request that
// met exitRace is sent again when sending it twice does what sending it
// once does: a look, a wait, a stop, a remove; never a create, a start,
// a pull or an import.
func (c *Client) do(ctx context.Context, r request, ok ...int) (*response, error) {
	again := r.body == nil && (r.method == http.MethodGet || r.method == http.MethodDelete ||
		strings.HasSuffix(r.path, "/wait") || strings.HasSuffix(r.path, "/stop"))
	for i := 0; ; i++ {
		resp, err := c.once(ctx, r, ok...)
		var ae *APIError
		if !again || i == raceRetries || !errors.As(err, &ae) || ae.Status != http.StatusInternalServerError ||
			!exitRace(ae.Message) {
			return resp, err
		}
		// The runtime updates its state when it next looks; the pause
		// only spares it a burst should that take a moment.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(i+1) * 10 * time.Millisecond):
		}
	}
}

// once is one sending of r, on a connection of its own.
func (c *Client) once(ctx context.Context, r request, ok ...int) (*response, error) {
	// r.path is escaped already: its parts are escaped where made.
	u := "http://d/" + apiVersion + "/libpod" + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	body := r.body
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
		r.contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{Socket: c.socket, Err: err}
	}
	// Canceling ctx closes the connection: a wait or a following log
	// read ends at once, and podman sees the client gone.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	resp, err := writeRead(conn, req)
	if err != nil {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("podman at %s: %s %s: %w", c.socket, r.method, r.path, err)
	}
	rs := &response{Response: resp, conn: conn, stop: stop}
	if resp.StatusCode/100 == 2 || contains(ok, resp.StatusCode) {
		return rs, nil
	}
	defer rs.close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Cause   string `json:"cause"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &eb) != nil || eb.Message == "" {
		eb.Message = strings.TrimSpace(string(raw))
	}
	return nil, &APIError{Status: resp.StatusCode, Message: eb.Message, Cause: eb.Cause}
}

func writeRead(conn net.Conn, req *http.Request) (*http.Response, error) {
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(bufio.NewReader(conn), req)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// call sends r and decodes a 2xx answer into out (nil: the body is
// dropped).
func (c *Client) call(ctx context.Context, r request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("unreadable answer: %w", err)
	}
	return nil
}

// Ping checks that the API service answers and returns its libpod API
// version.
func (c *Client) Ping(ctx context.Context) (version string, err error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/_ping"})
	if err != nil {
		return "", fmt.Errorf("podman ping: %w", err)
	}
	defer resp.close()
	v := resp.Header.Get("Libpod-Api-Version")
	if v == "" {
		return "", fmt.Errorf("podman ping: %s answers but is not podman's libpod API (no Libpod-Api-Version header)",
			c.socket)
	}
	return v, nil
}
