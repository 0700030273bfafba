package bloblock

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// Error is one failed storage call, compact enough for a log line or a
// history event ("renew: 409 LeaseIdMismatchWithLeaseOperation"). It unwraps
// to lease.ErrHeld, lease.ErrLost (or its refinements lease.ErrOtherLease
// and lease.ErrChanged) or lease.ErrRejected when storage gave a definite
// answer, to lease.ErrDenied when storage refused the caller or the
// request, and always to the underlying SDK error. Callers test those with
// errors.Is; Status and Code are for logs.
type Error struct {
	Op     string // acquire, renew, release, get, update, …
	Status int    // HTTP status; 0 when no response came back
	Code   string // storage error code, e.g. LeaseAlreadyPresent
	Kind   error  // lease.ErrHeld, lease.ErrLost (or a refinement), lease.ErrRejected, or nil (transient)
	Err    error
	// Message is the service's message (the first line of the error body's
	// <Message>) or, when no response came back, why (the transport's error
	// without the request URL); at most maxMessage bytes.
	Message string
}

var _ lease.StorageError = (*Error)(nil)

// StorageAnswer says what storage answered (lease.StorageError). With
// no response, code is "timeout" or "error".
func (e *Error) StorageAnswer() (op string, status int, code, message string) {
	code = e.Code
	if e.Status == 0 {
		code = "error"
		if errors.Is(e.Err, context.DeadlineExceeded) {
			code = "timeout"
		}
	}
	return e.Op, e.Status, code, e.Message
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
		// Message, not Err: the transport's error quotes the request URL.
		return fmt.Sprintf("%s: %s", e.Op, e.Message)
	}
}

func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 3)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.denied() {
		errs = append(errs, lease.ErrDenied)
	}
	return append(errs, e.Err)
}

// denied reports whether storage refused the caller or the request itself
// (lease.ErrDenied): 400, 401, 403 or a write it rejects — but not a 403
// that a role assignment still propagating explains
// (AuthorizationPermissionMismatch, which heals within minutes).
func (e *Error) denied() bool {
	if e.Status == http.StatusForbidden && e.Code == string(bloberror.AuthorizationPermissionMismatch) {
		return false
	}
	return e.Kind == lease.ErrRejected || e.Status == http.StatusBadRequest ||
		e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
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
	// or its container was deleted under us, so the lease is gone; a 412
	// (made At a version) that the record moved on to a later holding.
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
		e.Status, e.Code, e.Message = re.StatusCode, re.ErrorCode, serviceMessage(re)
	} else {
		e.Message = transportMessage(err)
	}
	switch {
	case bloberror.HasCode(err, bloberror.LeaseAlreadyPresent),
		kind == plainCall && bloberror.HasCode(err, bloberror.LeaseIsBreakingAndCannotBeAcquired):
		// A breaking lease is still held: nobody can take it until the
		// break period has passed.
		e.Kind = lease.ErrHeld
	case bloberror.HasCode(err, bloberror.LeaseIDMismatchWithLeaseOperation):
		e.Kind = lease.ErrOtherLease
	case bloberror.HasCode(err, lostCodes...):
		e.Kind = lease.ErrLost
	case kind != plainCall && (e.Status == http.StatusNotFound || bloberror.HasCode(err, goneCodes...)):
		e.Kind = lease.ErrLost
	case kind == guardedWrite && bloberror.HasCode(err, bloberror.ConditionNotMet):
		// A write made At a version the record has left.
		e.Kind = lease.ErrChanged
	case kind == guardedWrite && e.Status == http.StatusPreconditionFailed:
		e.Kind = lease.ErrLost
	case kind == leaseCall && storage.Changed(err):
		// A renew or release made At a version the record has left: the
		// holding it was made for is over.
		e.Kind = lease.ErrChanged
	case kind == guardedWrite && e.Status >= 400 && e.Status < 500 &&
		e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests:
		// 403 for metadata storage cannot carry, 400 for an oversized one…
		// Retrying the same write will not help; the elector keeps contending
		// (a 403 may also be a role assignment still propagating) but says so.
		e.Kind = lease.ErrRejected
	}
	return e
}

// maxMessage bounds Error.Message: enough for a service's sentence.
const maxMessage = 400

var messageElement = regexp.MustCompile(`(?s)<Message>(.*?)</Message>`)

// serviceMessage is the first line of the <Message> of an error answer's
// body (storage appends RequestId and Time on lines of their own). Only
// that element is read: others (AuthenticationErrorDetail) can quote the
// string storage signed.
func serviceMessage(re *azcore.ResponseError) string {
	if re.RawResponse == nil {
		return ""
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil {
		return ""
	}
	m := messageElement.FindSubmatch(body)
	if m == nil {
		return ""
	}
	line, _, _ := strings.Cut(html.UnescapeString(string(m[1])), "\n")
	return clip(strings.TrimSpace(line))
}

// transportMessage says why no answer came, without the request's URL (its
// query can carry a SAS signature).
func transportMessage(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "request timed out"
	case errors.Is(err, context.Canceled):
		return "request cancelled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(urlInText.ReplaceAllString(err.Error(), "<url>"))
}

// urlInText matches a URL quoted in an error text.
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"]*`)

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
