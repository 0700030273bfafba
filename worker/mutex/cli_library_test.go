package mutex_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lock ends its wait on an answer retrying cannot cure (a wrong account
// key: 403), returning it; a transient failure (storage unreachable) is
// retried, and logged to the Locker's logger as the storage_error line.
func TestLocker_LockEndsOnAnErrorRetryingCannotCure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		conn      string
		incurable bool
	}{
		{"wrong key", regexp.MustCompile(`AccountKey=[^;]+`).ReplaceAllString(server.ConnectionString(), "AccountKey=d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk="), true},
		{"storage unreachable", regexp.MustCompile(`BlobEndpoint=[^;]+`).ReplaceAllString(server.ConnectionString(), "BlobEndpoint=http://127.0.0.1:1/devstoreaccount1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: tc.conn, Container: "wrongkey", RequestTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var logs lockedBuffer
			cfg := mutex.DefaultConfig("a")
			cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			l, err := mutex.New(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
			defer cancel()
			start := time.Now()
			h, err := l.Lock(ctx, "r")
			took := time.Since(start)
			var be *bloblock.Error
			switch {
			case h != nil:
				t.Fatal("Lock got a lock")
			// 3 s tells the 403 at once from retrying until the 6 s
			// context ends: no stall needed (docs/chaos.md#a-busy-machine).
			case tc.incurable && (!errors.As(err, &be) || be.Status != 403 || took > 3*time.Second):
				t.Fatalf("Lock with a wrong key = %v after %s; want the 403 at once", err, took.Round(time.Millisecond))
			case !tc.incurable && !errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("Lock with storage unreachable = %v, want it to retry until ctx ends", err)
			case !tc.incurable && strings.Count(logs.String(), `"event":"storage_error"`) != 1:
				t.Fatalf("retried failures logged %d storage_error lines, want 1 (rate-limited):\n%s", strings.Count(logs.String(), `"event":"storage_error"`), logs.String())
			}
		})
	}
}

// A held lock's context ends with ErrLost as its cause when the holding is
// lost, and with ErrUnlocked when it is unlocked.
func TestHeld_ContextCauseSaysWhyItEnded(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c := newContainer(t, nil)
	l := newLocker(t, c, "a")
	h, err := l.TryLock(ctx, "cause")
	if err != nil {
		t.Fatal(err)
	}
	hctx, cancel := h.Context(ctx)
	defer cancel()
	if _, err := c.Delete(ctx, nil); err != nil { // the holding is lost at its next renew
		t.Fatal(err)
	}
	select {
	case <-hctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holding's context outlived its deleted blob")
	}
	if cause := context.Cause(hctx); !errors.Is(cause, mutex.ErrLost) {
		t.Fatalf("context.Cause = %v, want ErrLost", cause)
	}
	h2, err := l.TryLock(ctx, "cause-2")
	if err != nil {
		t.Fatal(err)
	}
	h2ctx, cancel2 := h2.Context(ctx)
	defer cancel2()
	_ = h2.Unlock(ctx)
	<-h2ctx.Done()
	if cause := context.Cause(h2ctx); !errors.Is(cause, mutex.ErrUnlocked) {
		t.Fatalf("after Unlock, context.Cause = %v, want ErrUnlocked", cause)
	}
}
