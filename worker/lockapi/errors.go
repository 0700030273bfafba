package lockapi

import (
	"context"
	"errors"

	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// public is what an answer may say about a failed storage call: the
// operation and storage's status and code, never the request URL (a SAS
// connection string carries its signature in it) nor a transport's text.
func public(err error) string {
	var be *bloblock.Error
	switch {
	case errors.As(err, &be) && be.Status != 0:
		return be.Error()
	case errors.As(err, &be) && errors.Is(err, context.DeadlineExceeded):
		return be.Op + ": request timed out"
	case errors.As(err, &be):
		return be.Op + ": no answer from storage"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "request ended before storage answered"
	}
	return "storage request failed"
}
