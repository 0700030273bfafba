//go:build azure

package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// After the storage-outage fault lifts its network rule, the storage front
// ends keep refusing (403) for a while, and the SDK does not retry a 403.
// The harness's reads of the evidence (history, ledger, sidecar states) go
// through retryStorage: they are retried with backoff until they succeed or
// the caller's context ends, so no record is lost to a lingering denial.

// backoff is the retry schedule of the harness's storage reads.
type backoff struct {
	first, max time.Duration
}

// storageBackoff is the schedule retryStorage uses (tests shorten it).
var storageBackoff = backoff{first: time.Second, max: 30 * time.Second}

// retryable reports whether a storage error may go away by itself: a
// denial while a network rule propagates (403), throttling, timeouts, 5xx,
// or no HTTP answer at all.
func retryable(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.StatusCode == http.StatusForbidden, re.StatusCode == http.StatusRequestTimeout,
			re.StatusCode == http.StatusTooManyRequests, re.StatusCode >= 500:
			return true
		}
		return false
	}
	// No HTTP answer: a connection refused, reset or cut short.
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// retryStorage runs f until it succeeds, fails for good, or ctx ends;
// logf (may be nil) hears about each retry. When ctx ends, the error names
// the last answer storage gave (say, the lingering 403) as well as the
// attempt the deadline cut short: "deadline exceeded" alone hides the cause.
func retryStorage(ctx context.Context, what string, logf func(string, ...any), f func() error) error {
	wait := storageBackoff.first
	var lastAnswer *azcore.ResponseError // the last error that carried an HTTP response
	giveUp := func(err error, attempt int) error {
		var re *azcore.ResponseError
		if lastAnswer != nil && !errors.As(err, &re) {
			return fmt.Errorf("%s: %w (gave up after %d attempts: %v; last answer from storage: %d %s)",
				what, err, attempt, ctx.Err(), lastAnswer.StatusCode, lastAnswer.ErrorCode)
		}
		return fmt.Errorf("%s: %w (gave up after %d attempts: %v)", what, err, attempt, ctx.Err())
	}
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !retryable(err) {
			return err
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			lastAnswer = re
		}
		if ctx.Err() != nil {
			return giveUp(err, attempt)
		}
		if logf != nil {
			logf("storage: %s failed (attempt %d), retrying in %v: %v", what, attempt, wait, err)
		}
		select {
		case <-ctx.Done():
			return giveUp(err, attempt)
		case <-time.After(wait):
		}
		wait = min(2*wait, storageBackoff.max)
	}
}
