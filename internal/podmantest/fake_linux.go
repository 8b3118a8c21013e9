package podmantest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
)

// recorded holds the exchanges TestRecord recorded on podman 4.3.1 (see
// record_linux_test.go for how to record them again).
//
//go:embed testdata/libpod-4.3.1.json
var recorded []byte

// Recording is the file of recorded exchanges.
type Recording struct {
	Podman    string     `json:"podman"` // the version recorded
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one request and the answer podman gave it. A request is
// matched by its method, path, query and, for a create, the container's
// name: the recording names its containers, and calls them by name. The
// same request recorded more than once (an inspect before and after a
// remove) is answered as recorded, in order, the last answer repeating.
type Exchange struct {
	Method      string `json:"method"`
	Path        string `json:"path"` // escaped, as sent
	Query       string `json:"query,omitempty"`
	Name        string `json:"name,omitempty"` // a create's container name
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	// Headers are the answer's headers of recordedHeaders.
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body"`
}

func (e Exchange) key() string {
	return e.Method + " " + e.Path + "?" + e.Query + " " + e.Name
}

// The names of what the recording holds, which the client's tests call.
const (
	RecExit        = "rec-exit"  // printed "hello" (and "err: hello" to stderr), exited 0
	RecCode        = "rec-code"  // exited 7
	RecSleep       = "rec-sleep" // ran "sleep 3600", stopped
	RecNoImage     = "rec-noimage"
	RecBadUser     = "rec-baduser" // its user is absent from the image: start fails (500)
	RecAbsentImage = "localhost/svcrun-podmantest-absent:1"
	RecImported    = "localhost/svcrun-podmantest-imported:1"
)

// recordedHeaders are the headers of an answer the client reads.
var recordedHeaders = []string{"Libpod-Api-Version"}

// Request is a request the fake received.
type Request struct {
	Method, Path, Query string
	Body                []byte
}

// Fake is a server on a Unix socket answering the libpod requests of the
// recording with podman's recorded answers, for the client's tests where
// no podman runs. A request not recorded fails the test.
type Fake struct {
	Socket string
	// Version is the podman version the answers were recorded on.
	Version string

	t       testing.TB
	answers map[string][]Exchange

	mu       sync.Mutex
	requests []Request
	asked    map[string]int // of each key, how many answered
	first    map[string][]Exchange
}

// NewFake starts a Fake, stopped when the test ends.
func NewFake(t testing.TB) *Fake {
	t.Helper()
	var rec Recording
	if err := json.Unmarshal(recorded, &rec); err != nil {
		t.Fatalf("podmantest: the recording: %v", err)
	}
	f := &Fake{Socket: filepath.Join(t.TempDir(), "podman.sock"), Version: rec.Podman, t: t,
		answers: map[string][]Exchange{}, asked: map[string]int{}, first: map[string][]Exchange{}}
	for _, e := range rec.Exchanges {
		f.answers[e.key()] = append(f.answers[e.key()], e)
	}
	l, err := net.Listen("unix", f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// AnswerFirst makes the next request of method to path (escaped, whatever
// its query) get status and body, before the recorded answers: the
// answers of a runtime's passing faults, which no recording holds.
func (f *Fake) AnswerFirst(method, path string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := method + " " + path
	f.first[k] = append(f.first[k], Exchange{Method: method, Path: path, Status: status,
		ContentType: "application/json", Body: body})
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e := Exchange{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query().Encode()}
	if r.Method == http.MethodPost && filepath.Base(e.Path) == "create" {
		var spec struct {
			Name string `json:"name"`
		}
		json.Unmarshal(body, &spec)
		e.Name = spec.Name
	}
	f.mu.Lock()
	f.requests = append(f.requests, Request{Method: e.Method, Path: e.Path, Query: e.Query, Body: body})
	if fs := f.first[e.Method+" "+e.Path]; len(fs) > 0 {
		f.first[e.Method+" "+e.Path] = fs[1:]
		f.mu.Unlock()
		answer(w, fs[0])
		return
	}
	as := f.answers[e.key()]
	n := min(f.asked[e.key()], len(as)-1)
	f.asked[e.key()]++
	f.mu.Unlock()
	if len(as) == 0 {
		f.t.Errorf("podmantest: fake: no recorded answer to %s (record again: see record_linux_test.go)", e.key())
		http.Error(w, fmt.Sprintf("fake: no recorded answer to %s", e.key()), http.StatusNotImplemented)
		return
	}
	answer(w, as[n])
}

func answer(w http.ResponseWriter, a Exchange) {
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}
