// Package server serves svcrun's local API (package api describes it)
// for one agent: the socket, the peer check, the validation of request
// bodies, and the answer of every error, with the status and code
// api.Answer gives it.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
)

// MaxSocketPath is the longest socket path every supported platform binds
// (sockaddr_un's sun_path is 104 bytes on macOS, 108 on Linux, with a NUL).
const MaxSocketPath = 103

// Server serves the API of one agent on a Unix socket.
type Server struct {
	a      *agent.Agent
	log    *slog.Logger
	socket string
	self   int // svcrun's effective uid
	group  int // socket_group's gid, or -1

	ln   *net.UnixListener
	info os.FileInfo // the socket file as created, to remove only ours
	http *http.Server

	base   context.Context // every request's context derives from it
	cancel context.CancelFunc
	done   chan struct{} // Serve returned

	// bodyTimeout bounds the time from a request's headers to the end of
	// its body.
	bodyTimeout time.Duration

	closeOnce sync.Once
	closeErr  error
}

// DefaultBodyTimeout is how long a request's body may take to arrive after
// its headers (a local client sends it at once).
const DefaultBodyTimeout = 10 * time.Second

// Option configures a Server.
type Option func(*Server)

// WithSocketGroup makes the socket 0660 with group gid (socket_group), whose
// members may then use the API; a negative gid keeps it 0600.
func WithSocketGroup(gid int) Option { return func(s *Server) { s.group = gid } }

// WithBodyTimeout sets how long a request's body may take to arrive after
// its headers (DefaultBodyTimeout).
func WithBodyTimeout(d time.Duration) Option { return func(s *Server) { s.bodyTimeout = d } }

// New creates the socket and serves the API on it until Shutdown or
// Close. The agent may start running after: requests wait for its loop.
func New(a *agent.Agent, socketPath string, log *slog.Logger, opts ...Option) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{a: a, log: log, socket: socketPath, self: os.Geteuid(), group: -1,
		done: make(chan struct{}), bodyTimeout: DefaultBodyTimeout}
	for _, o := range opts {
		o(s)
	}
	ln, info, err := listen(socketPath, s.group)
	if err != nil {
		return nil, err
	}
	s.ln, s.info = ln, info
	s.base, s.cancel = context.WithCancel(context.Background())
	// Its accept errors come every few milliseconds at the file limit:
	// through the agent's rate limit. Only tests of the socket alone
	// serve without an agent.
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	if a != nil {
		errorLog = a.ErrorLog("api")
	}
	s.http = &http.Server{
		Handler:           s.routes(),
		ConnContext:       withPeer,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errorLog,
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("API server stopped", "socket", socketPath, "error", err)
		}
	}()
	log.Info("API listening", "socket", socketPath)
	return s, nil
}

// Shutdown stops the server: it stops accepting, ends the event streams
// and the acquires still waiting (their requests are withdrawn), waits for
// the other requests until ctx is done, and removes the socket file.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.cancel()
		err := s.http.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, s.http.Close())
		}
		<-s.done
		s.removeSocket()
		s.closeErr = err
	})
	return s.closeErr
}

// Close is Shutdown with a 5 s grace.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Shutdown(ctx)
}

func (s *Server) removeSocket() {
	fi, err := os.Lstat(s.socket)
	if err == nil && os.SameFile(fi, s.info) {
		if err := os.Remove(s.socket); err != nil {
			s.log.Warn("cannot remove the API socket", "socket", s.socket, "error", err)
		}
	}
}

// listen creates the socket file, mode 0600 from the start; with a group
// (gid 0 or more) it then becomes 0660 with that group.
func listen(path string, group int) (*net.UnixListener, os.FileInfo, error) {
	switch {
	case path == "":
		return nil, nil, errors.New("no API socket path: set socket in the node configuration")
	case len(path) > MaxSocketPath:
		return nil, nil, fmt.Errorf("API socket %s: the path is %d bytes, more than the %d a "+
			"Unix socket allows: choose a shorter socket in the node configuration", path, len(path), MaxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("API socket %s: cannot create its directory: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("API socket %s: the path exists and is not a socket "+
				"(%s): move it away or choose another socket in the node configuration", path, fi.Mode().Type())
		}
		c, err := net.DialTimeout("unix", path, 2*time.Second)
		if err == nil {
			c.Close()
			return nil, nil, fmt.Errorf("another svcrun listens on %s: stop it first (or give "+
				"this one another socket in the node configuration)", path)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, nil, fmt.Errorf("API socket %s: something holds it but does not answer "+
				"(%v): stop it first or choose another socket", path, err)
		}
		// Nothing listens: a stale file from a svcrun that did not exit cleanly.
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("API socket %s: cannot remove the stale socket file: %w", path, err)
		}
	}
	var ln *net.UnixListener
	err := withUmask(0o177, func() error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // removeSocket removes it, only if it is still ours
	fail := func(err error) (*net.UnixListener, os.FileInfo, error) {
		ln.Close()
		os.Remove(path)
		return nil, nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if group >= 0 {
		if err := os.Lchown(path, -1, group); err != nil {
			return fail(fmt.Errorf("socket_group: %w", err))
		}
		mode = 0o660
	}
	if err := os.Chmod(path, mode); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return ln, fi, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.handleStatus)
	mux.HandleFunc("POST /v1/leases", s.handleAcquire)
	mux.HandleFunc("POST /v1/leases/{id}/renew", s.handleRenew)
	mux.HandleFunc("DELETE /v1/leases/{id}", s.handleRelease)
	mux.HandleFunc("POST /v1/doctor", s.handleDoctor)
	mux.HandleFunc("POST /v1/reap", s.handleReap)
	mux.HandleFunc("POST /v1/services/{module}/{service}/reset", s.handleReset)
	mux.HandleFunc("GET /v1/services/{module}/{service}/processes", s.handleProcesses)
	mux.HandleFunc("POST /v1/modules/{name}/enable", s.handleModule(true))
	mux.HandleFunc("POST /v1/modules/{name}/disable", s.handleModule(false))
	mux.HandleFunc("POST /v1/reload", s.handleReload)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	s.containerRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A path that exists with another method is a 405, else a 404;
		// both in JSON, unlike the mux's own answers.
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			r2 := r.Clone(r.Context())
			r2.Method = m
			if _, pat := mux.Handler(r2); pat != "/" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, api.CodeNotAllowed,
				fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")), "")
			return
		}
		writeError(w, http.StatusNotFound, api.CodeNotFound,
			fmt.Sprintf("no route %s %s: the API's routes are under /v1 (see package api)", r.Method, r.URL.Path), "")
	})
	return s.guard(mux)
}

// guard refuses peers that may not use the API.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != http.NoBody {
			// Until the handler has read the body (readBody lifts the
			// deadline); a body no handler reads (a refused peer's too) is
			// discarded after the answer, under the same deadline. No
			// server-wide ReadTimeout: it would cancel acquires waiting
			// for admission.
			if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout)); err != nil {
				s.fail(w, r, "", err)
				return
			}
		}
		p, ok := peerFrom(r.Context())
		if !ok {
			p = peer{err: errors.New("no credentials recorded for the connection")}
		}
		if err := authorize(p, s.self, s.group); err != nil {
			s.log.Warn("API request refused", "uid", p.uid, "pid", p.pid, "method", r.Method, "path", r.URL.Path, "error", err)
			writeError(w, http.StatusForbidden, api.CodeForbidden, err.Error(), "")
			return
		}
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			start := time.Now()
			defer func() {
				s.log.Debug("API request", "method", r.Method, "path", r.URL.Path, "uid", p.uid, "took", time.Since(start))
			}()
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg, reason string) {
	writeJSON(w, status, api.ErrorBody{Error: msg, Code: code, Reason: reason})
}

// fail answers err with the status and code api.Answer gives it. what
// names the subject for messages ("lease lease-1f..."), or is empty.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	prefix := ""
	if what != "" {
		prefix = what + ": "
	}
	status, code := api.Answer(err)
	var br *BadRequestError
	var rej *errdefs.RejectedError
	switch {
	case errors.As(err, &br):
		writeJSON(w, status, api.ErrorBody{Error: "bad request: " + br.Error(), Code: code, Field: br.Field})
	case errors.As(err, &rej):
		writeError(w, status, code, err.Error(), rej.Reason)
	case code == api.CodeUnknownLease, code == api.CodeStoreFull, code == api.CodeStoreUnlinked:
		writeError(w, status, code, prefix+err.Error(), "")
	case code == api.CodeStopping, s.base.Err() != nil:
		writeError(w, http.StatusServiceUnavailable, api.CodeStopping, "svcrun is stopping: try again when it is back", "")
	case r.Context().Err() != nil:
		// The client went away; nobody reads this.
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "request canceled", "")
	case code == api.CodeNotFound, code == api.CodeRefused:
		// The agent's message names the service, module or file already.
		writeError(w, status, code, err.Error(), "")
	case code == api.CodeInternal:
		s.log.Warn("API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		fallthrough
	default:
		writeError(w, status, code, prefix+err.Error(), "")
	}
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.a.Status(r.Context())
	if err != nil {
		s.fail(w, r, "status", err)
		return
	}
	writeJSON(w, http.StatusOK, statusOf(st))
}

func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(w, r, s.bodyTimeout)
	if err != nil {
		s.fail(w, r, "acquire", err)
		return
	}
	req, err := decodeAcquire(b)
	if err != nil {
		s.fail(w, r, "acquire", err)
		return
	}
	g, err := s.a.Acquire(r.Context(), agent.AcquireRequest{
		Job: req.Job, Attempt: req.Attempt,
		Requirements: engine.Requirements{Pools: req.Pools, NeedsPools: req.NeedsPools, Capabilities: req.Capabilities},
		Wait:         time.Duration(req.Wait), TTL: time.Duration(req.TTL),
	})
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	release := func(reason string) {
		// Nobody would hold the lease: give it back.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		err := s.a.Release(ctx, g.Lease)
		s.log.Warn("lease admitted but "+reason+": released", "lease", g.Lease, "attempt", g.Attempt, "error", err)
	}
	if r.Context().Err() != nil {
		release("its client went away")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	err = json.NewEncoder(w).Encode(grantOf(g))
	if err != nil {
		// Only a failed write says the client did not get it: once the
		// answer is out, the client may well close the connection.
		release("the answer could not be sent")
	}
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	exp, err := s.a.Renew(r.Context(), engine.LeaseID(id))
	if err != nil {
		s.fail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Renewal{Lease: id, Expires: exp})
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.a.Release(r.Context(), engine.LeaseID(id)); err != nil {
		s.fail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Released{Lease: id})
}

func (s *Server) handleDoctor(w http.ResponseWriter, r *http.Request) {
	if err := s.a.Doctor("requested over the API"); err != nil {
		s.fail(w, r, "doctor", err)
		return
	}
	writeJSON(w, http.StatusOK, api.Done{OK: true, Message: "the probes run again; their results show in svcrun status"})
}

func (s *Server) handleReap(w http.ResponseWriter, r *http.Request) {
	d, err := s.a.Reap(r.Context())
	if err != nil {
		s.fail(w, r, "reap", err)
		return
	}
	writeJSON(w, http.StatusOK, reapOf(d))
}

// serviceTarget is the service a /v1/services/{module}/{service} path
// names.
func serviceTarget(r *http.Request) engine.Target {
	return engine.Target{Module: r.PathValue("module"), Name: r.PathValue("service")}
}

func (s *Server) handleProcesses(w http.ResponseWriter, r *http.Request) {
	t := serviceTarget(r)
	ps, err := s.a.Processes(r.Context(), t)
	if err != nil {
		s.fail(w, r, "processes of "+t.String(), err)
		return
	}
	out := []api.Process{}
	for _, p := range ps {
		out = append(out, api.Process{PID: p.PID, Command: p.Command})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	t := serviceTarget(r)
	if err := s.a.Reset(r.Context(), t); err != nil {
		s.fail(w, r, "reset "+t.String(), err)
		return
	}
	writeJSON(w, http.StatusOK, api.Done{OK: true,
		Message: t.String() + ": failures cleared; svcrun starts it again when it is needed"})
}

func (s *Server) handleModule(enable bool) http.HandlerFunc {
	verb := map[bool]string{true: "enabled", false: "disabled"}[enable]
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := s.a.SetModuleEnabled(r.Context(), name, enable); err != nil {
			s.fail(w, r, "module "+name, err)
			return
		}
		writeJSON(w, http.StatusOK, api.Done{OK: true,
			Message: fmt.Sprintf("module %s %s until the next reload or restart (the configuration file is unchanged)", name,
				verb)})
	}
}

func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	notes, err := s.a.Reload(r.Context())
	if err != nil {
		if !errors.Is(err, errdefs.ErrStopping) {
			err = refusedError{err}
		}
		s.fail(w, r, "reload", err)
		return
	}
	writeJSON(w, http.StatusOK, api.ReloadResult{RestartNeeded: nonNil(notes)})
}

// refusedError is a reload the agent refused for err.
type refusedError struct{ err error }

func (e refusedError) Error() string        { return e.err.Error() + " (the running configuration stays)" }
func (e refusedError) Unwrap() error        { return e.err }
func (e refusedError) Is(target error) bool { return target == errdefs.ErrRefused }

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseEventsQuery(r.URL.Query())
	if err != nil {
		var qe *api.EventsQueryError
		errors.As(err, &qe)
		s.fail(w, r, "", bad(qe.Param, "%q: %s", qe.Value, qe.Reason))
		return
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	past, ch := s.a.Subscribe(ctx, q.Since, q.Last)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, rec := range past {
		if err := enc.Encode(api.Record{At: rec.At, Kind: rec.Kind, Text: rec.Text}); err != nil {
			return
		}
	}
	if err := rc.Flush(); err != nil || q.NoFollow {
		return
	}
	for rec := range ch {
		if err := enc.Encode(api.Record{At: rec.At, Kind: rec.Kind, Text: rec.Text}); err != nil {
			return
		}
		if len(ch) == 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	if err := s.a.WriteMetrics(r.Context(), &b); err != nil {
		s.fail(w, r, "metrics", err)
		return
	}
	w.Header().Set("Content-Type", agent.MetricsContentType)
	_, _ = io.WriteString(w, b.String())
}
