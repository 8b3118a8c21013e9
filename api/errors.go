package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/oarbank/svcrun/errdefs"
)

// kind is one error the API tells apart: the status and code the server
// answers it with, and the error the client gives back for the code.
type kind struct {
	err    error
	status int
	code   string
}

// kinds is the one map between errors and answers, first match first:
// a refused reload is a 422 whatever refused it.
var kinds = []kind{
	{errdefs.ErrRefused, http.StatusUnprocessableEntity, CodeRefused},
	{errdefs.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{errdefs.ErrRejected, http.StatusConflict, CodeRejected},
	{errdefs.ErrUnknownLease, http.StatusNotFound, CodeUnknownLease},
	{errdefs.ErrFull, http.StatusInsufficientStorage, CodeStoreFull},
	{errdefs.ErrUnlinked, http.StatusInsufficientStorage, CodeStoreUnlinked},
	{errdefs.ErrStopping, http.StatusServiceUnavailable, CodeStopping},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, CodeTimeout},
	{errdefs.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{errdefs.ErrForbidden, http.StatusForbidden, CodeForbidden},
	{errdefs.ErrConflict, http.StatusConflict, CodeConflict},
	{errdefs.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
}

// Answer returns the status and code that answer err: those of the
// first kind it matches with errors.Is, else 500 internal.
func Answer(err error) (status int, code string) {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.status, k.code
		}
	}
	return http.StatusInternalServerError, CodeInternal
}

// kindOf is the error of code, or nil for a code no kind has.
func kindOf(code string) error {
	for _, k := range kinds {
		if k.code == code {
			return k.err
		}
	}
	return nil
}
