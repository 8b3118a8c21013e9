package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/store"
)

// TestErrorAnswers sends each error the agent returns through the server's
// answer and the client's reading of it: the status and code come from
// api.Answer, and the caller tells the error apart with errors.Is/As.
func TestErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		msg    string
		is     error // what the client's error matches
	}{
		{"bad request", &BadRequestError{Field: "ttl", Reason: "too long"}, http.StatusBadRequest,
			api.CodeBadRequest, "bad request: ttl: too long", errdefs.ErrInvalid},
		{"rejected", &errdefs.RejectedError{Reason: "pool kv-slots: 1 free"}, http.StatusConflict,
			api.CodeRejected, "rejected: pool kv-slots: 1 free", errdefs.ErrRejected},
		{"unknown lease", errdefs.ErrUnknownLease, http.StatusNotFound, api.CodeUnknownLease,
			"lease l1: no such lease (never admitted, released, or expired)", errdefs.ErrUnknownLease},
		{"lease ended", &errdefs.LeaseEndedError{Reason: "its module was removed"},
			http.StatusNotFound, api.CodeUnknownLease, "lease l1: the lease has ended: its " +
				"module was removed", errdefs.ErrUnknownLease},
		{"store full", fmt.Errorf("%w: /data: no space left on device", store.ErrFull),
			http.StatusInsufficientStorage, api.CodeStoreFull, "lease l1: the data dir is full: " +
				"/data: no space left on device", store.ErrFull},
		{"store unlinked", fmt.Errorf("%w: deleted", store.ErrUnlinked),
			http.StatusInsufficientStorage, api.CodeStoreUnlinked, "lease l1: the state file is " +
				"no longer linked where svcrun opened it: deleted", store.ErrUnlinked},
		{"stopping", errdefs.ErrStopping, http.StatusServiceUnavailable, api.CodeStopping,
			"svcrun is stopping: try again when it is back", errdefs.ErrStopping},
		{"timeout", fmt.Errorf("renew: %w", context.DeadlineExceeded), http.StatusGatewayTimeout,
			api.CodeTimeout, "lease l1: renew: context deadline exceeded", context.DeadlineExceeded},
		{"no such service", &errdefs.NotFoundError{Kind: "service", Name: "demo/nope", Known: []string{"demo/kv"}},
			http.StatusNotFound, api.CodeNotFound, `no such service "demo/nope"; services: demo/kv`, errdefs.ErrNotFound},
		{"reload refused", refusedError{errors.New("svcrun.toml:3: bad")},
			http.StatusUnprocessableEntity, api.CodeRefused, "svcrun.toml:3: bad (the running " +
				"configuration stays)", errdefs.ErrRefused},
		{"anything else", errors.New("boom"), http.StatusInternalServerError, api.CodeInternal, "lease l1: boom", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, code := api.Answer(tc.err); status != tc.status || code != tc.code {
				t.Errorf("Classify: %d %s, want %d %s", status, code, tc.status, tc.code)
			}
			err := answer(t, tc.err)
			if err == nil || err.Error() != tc.msg {
				t.Fatalf("client got %v, want %q", err, tc.msg)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("client error %v does not match %v", err, tc.is)
			}
			var ae *api.Error
			var rej *errdefs.RejectedError
			switch {
			case errors.As(err, &rej):
				if tc.code != api.CodeRejected || rej.Reason != "pool kv-slots: 1 free" {
					t.Errorf("rejected with reason %q", rej.Reason)
				}
			case errors.As(err, &ae):
				if ae.Status != tc.status || ae.Code != tc.code {
					t.Errorf("client error %d %s, want %d %s", ae.Status, ae.Code, tc.status, tc.code)
				}
				if tc.code == api.CodeBadRequest && ae.Field != "ttl" {
					t.Errorf("bad request field %q, want ttl", ae.Field)
				}
			default:
				t.Errorf("client error %T, want *api.Error or *errdefs.RejectedError", err)
			}
		})
	}
}

// answer serves one route that fails with err, and returns what the
// client makes of the answer.
func answer(t *testing.T, err error) error {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, lerr := net.Listen("unix", sock)
	if lerr != nil {
		t.Fatal(lerr)
	}
	s := &Server{log: slog.New(slog.DiscardHandler), base: context.Background()}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter,
		r *http.Request) {
		s.fail(w, r, "lease l1", err)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	c := api.NewClient(sock)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a failure guard only
	defer cancel()
	_, got := c.Renew(ctx, "l1")
	return got
}
