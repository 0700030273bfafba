package bloblock

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/election"
)

// Error is one failed storage call, compact enough for a log line or a
// history event ("renew: 409 LeaseIdMismatchWithLeaseOperation"). It unwraps
// to election.ErrLockHeld or election.ErrLockLost when storage gave a
// definite answer, and always to the underlying SDK error.
type Error struct {
	Op     string // acquire, renew, release, get, update, …
	Status int    // HTTP status; 0 when no response came back
	Code   string // storage error code, e.g. LeaseAlreadyPresent
	Kind   error  // election.ErrLockHeld, election.ErrLockLost, or nil (transient)
	Err    error
}

func (e *Error) Error() string {
	switch {
	case e.Status != 0 && e.Code != "":
		return fmt.Sprintf("%s: %d %s", e.Op, e.Status, e.Code)
	case e.Status != 0:
		return fmt.Sprintf("%s: HTTP %d", e.Op, e.Status)
	case errors.Is(e.Err, context.DeadlineExceeded):
		return e.Op + ": request timed out"
	default:
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
}

func (e *Error) Unwrap() []error {
	if e.Kind != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Err}
}

// Codes that mean our lease is definitely gone. Lease operations answer 409
// with the first three; lease-guarded writes answer 412 with the others.
var lostCodes = []bloberror.Code{
	bloberror.LeaseIDMismatchWithLeaseOperation,
	bloberror.LeaseIsBrokenAndCannotBeRenewed,
	bloberror.LeaseNotPresentWithLeaseOperation,
	bloberror.LeaseIDMismatchWithBlobOperation,
	bloberror.LeaseNotPresentWithBlobOperation,
	bloberror.LeaseLost,
}

// callKind says what a failed call was, which decides what its answer means.
type callKind int

const (
	// plainCall: acquire, get, break, creates — a 404 means "not there yet".
	plainCall callKind = iota
	// leaseCall: renew or release of a lease we hold — a 404 means the blob
	// or its container was deleted under us, so the lease is gone.
	leaseCall
	// guardedWrite: a write conditioned on our lease — any 412 means the
	// condition (our lease) no longer holds, a 404 that the blob is gone, and
	// any other 4xx that storage will not take what we write.
	guardedWrite
)

// Codes that mean the blob the lease was on no longer exists.
var goneCodes = []bloberror.Code{bloberror.BlobNotFound, bloberror.ContainerNotFound}

// classify turns an SDK error into an *Error: definite answers (someone
// holds the lease; our lease is gone; storage refuses what we write) are
// marked, everything else — timeouts, 5xx, 503 ServerBusy, throttling,
// connection errors, 403 while a role assignment propagates — is transient,
// and the elector retries it.
func classify(op string, err error, kind callKind) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Err: err}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		e.Status, e.Code = re.StatusCode, re.ErrorCode
	}
	switch {
	case bloberror.HasCode(err, bloberror.LeaseAlreadyPresent),
		kind == plainCall && bloberror.HasCode(err, bloberror.LeaseIsBreakingAndCannotBeAcquired):
		// A breaking lease is still held: nobody can take it until the
		// break period has passed.
		e.Kind = election.ErrLockHeld
	case bloberror.HasCode(err, lostCodes...):
		e.Kind = election.ErrLockLost
	case kind != plainCall && (e.Status == http.StatusNotFound || bloberror.HasCode(err, goneCodes...)):
		e.Kind = election.ErrLockLost
	case kind == guardedWrite && e.Status == http.StatusPreconditionFailed:
		e.Kind = election.ErrLockLost
	case kind == guardedWrite && e.Status >= 400 && e.Status < 500 &&
		e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests:
		// 403 for metadata storage cannot carry, 400 for an oversized one…
		// Retrying the same write will not help; the elector keeps contending
		// (a 403 may also be a role assignment still propagating) but says so.
		e.Kind = election.ErrRejected
	}
	return e
}
