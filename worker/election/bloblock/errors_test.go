package bloblock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// A failed call says what storage answered — op, status, code and the
// service's message — or, with no answer, why, and never the request URL
// (whose query can carry a SAS signature).
func TestError_SaysWhatStorageAnsweredWithoutTheURL(t *testing.T) {
	strict := azuritetest.StartWithT(t, azuritetest.Options{CheckAPIVersion: true})
	port := azuritetest.ReservePort(t) // nothing listens there
	const secret = "c2VjcmV0LXNpZ25hdHVyZQ"
	sas := fmt.Sprintf("BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;SharedAccessSignature=sv=2022-11-02&sp=rwdl&sig=%s", port, secret)
	for _, tt := range []struct {
		name          string
		conn          string
		status        int
		code, message string
	}{
		{"API version refused", strict.ConnectionString(), 400, "InvalidHeaderValue", "API version"},
		{"nothing listening", sas, 0, "error", "connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: tt.conn, Container: "answers", RequestTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			lock, err := bloblock.New(c, "leader")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = lock.Acquire(ctx, uuid.NewString(), 15*time.Second)
			var se lease.StorageError
			if !errors.As(err, &se) {
				t.Fatalf("Acquire = %v (%T), want an lease.StorageError", err, err)
			}
			op, status, code, message := se.StorageAnswer()
			if op != "acquire" || status != tt.status || code != tt.code || !strings.Contains(message, tt.message) {
				t.Fatalf("StorageAnswer() = %q %d %q %q, want acquire %d %q and a message with %q", op, status, code, message, tt.status, tt.code, tt.message)
			}
			for _, s := range []string{message, err.Error()} {
				if strings.Contains(s, secret) || strings.Contains(s, "http://") {
					t.Fatalf("%q carries the request URL or its signature", s)
				}
			}
		})
	}
}

// Callers that need more than the elector does (package mutex) test the
// finer answers with errors.Is: another lease holds it, the record moved
// on from the version a request was made At, storage denies the request.
// The first two still match lease.ErrLost.
func TestError_FinerAnswersMatchTheirSentinels(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	l := newLock(t, c)
	mine, other := uuid.NewString(), uuid.NewString()
	if err := l.Acquire(ctx, mine, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, mine, lease.Record{Holder: "a", Term: 5}); err != nil {
		t.Fatal(err)
	}
	old := version(t, l)
	if err := l.Update(ctx, mine, lease.Record{Holder: "a", Term: 6}); err != nil {
		t.Fatal(err)
	}
	elsewhere, err := bloblock.New(c, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		err       error
		want, not []error
	}{
		{"renew under another lease ID", l.Renew(ctx, other), []error{lease.ErrOtherLease, lease.ErrLost}, []error{lease.ErrChanged, lease.ErrDenied}},
		{"renew at an older version", l.At(old).Renew(ctx, mine), []error{lease.ErrChanged, lease.ErrLost}, []error{lease.ErrOtherLease, lease.ErrDenied}},
		{"write at an older version", l.At(old).Update(ctx, mine, lease.Record{Holder: "a", Term: 7}), []error{lease.ErrChanged, lease.ErrLost}, []error{lease.ErrOtherLease}},
		{"write under another lease ID", l.Update(ctx, other, lease.Record{Holder: "b", Term: 7}), []error{lease.ErrLost}, []error{lease.ErrChanged, lease.ErrOtherLease}},
		{"a lease storage does not grant", elsewhere.Acquire(ctx, other, 5*time.Second), []error{lease.ErrDenied}, []error{lease.ErrLost, lease.ErrHeld}},
	} {
		for _, w := range tc.want {
			if !errors.Is(tc.err, w) {
				t.Errorf("%s = %v, want it to match %q", tc.name, tc.err, w)
			}
		}
		for _, n := range tc.not {
			if errors.Is(tc.err, n) {
				t.Errorf("%s = %v, want it not to match %q", tc.name, tc.err, n)
			}
		}
	}
}

// ErrDenied is what retrying will not cure: not a role assignment still
// propagating (403 AuthorizationPermissionMismatch), nor throttling.
func TestError_DeniedIsWhatRetryingWillNotCure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e      *bloblock.Error
		denied bool
	}{
		{&bloblock.Error{Op: "acquire", Status: 403, Code: "AuthenticationFailed"}, true},
		{&bloblock.Error{Op: "acquire", Status: 403, Code: "AuthorizationPermissionMismatch"}, false},
		{&bloblock.Error{Op: "update", Status: 403, Code: "AuthorizationPermissionMismatch", Kind: lease.ErrRejected}, false},
		{&bloblock.Error{Op: "update", Status: 409, Code: "SomethingElse", Kind: lease.ErrRejected}, true},
		{&bloblock.Error{Op: "acquire", Status: 401}, true},
		{&bloblock.Error{Op: "acquire", Status: 400, Code: "InvalidHeaderValue"}, true},
		{&bloblock.Error{Op: "acquire", Status: 503, Code: "ServerBusy"}, false},
		{&bloblock.Error{Op: "acquire", Status: 429}, false},
		{&bloblock.Error{Op: "acquire"}, false},
	} {
		if got := errors.Is(tc.e, lease.ErrDenied); got != tc.denied {
			t.Errorf("%v (kind %v): errors.Is(ErrDenied) = %v, want %v", tc.e, tc.e.Kind, got, tc.denied)
		}
	}
}
