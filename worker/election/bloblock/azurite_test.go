package bloblock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// These tests run against a real Azurite that TestMain starts and stops.
// Each test uses its own container so they can run in parallel.

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var containerSeq atomic.Int64

type requests struct {
	mu sync.Mutex
	n  map[string]int // "op code" → count
}

func (r *requests) observe(op, code string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[op+" "+code]++
}

func (r *requests) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}

// newContainer returns a client on a fresh, not yet created container.
func newContainer(t *testing.T) (*container.Client, *requests) {
	t.Helper()
	reqs := &requests{n: map[string]int{}}
	name := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e9, containerSeq.Add(1))
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: name,
		RequestTimeout: 2 * time.Second, Observe: reqs.observe,
	})
	if err != nil {
		t.Fatalf("NewContainerClient: %v", err)
	}
	return c, reqs
}

func newLock(t *testing.T, c *container.Client) *bloblock.Lock {
	t.Helper()
	l, err := bloblock.New(c, "leader")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestLock_ClassifiesStorageAnswers(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, reqs := newContainer(t)
	a, b := newLock(t, c), newLock(t, c)

	// The first acquire creates the container and the blob.
	if err := a.Acquire(ctx, 15*time.Second); err != nil {
		t.Fatalf("first Acquire on a missing container: %v", err)
	}
	if err := b.Acquire(ctx, 15*time.Second); !errors.Is(err, election.ErrLockHeld) {
		t.Fatalf("Acquire while held = %v, want ErrLockHeld", err)
	}
	if err := a.Acquire(ctx, 15*time.Second); err != nil {
		t.Fatalf("re-acquire of our own lease (same ID) = %v, want nil", err)
	}
	if err := a.Update(ctx, election.Record{Holder: "a", Term: 7, Acquired: time.Now()}); err != nil {
		t.Fatalf("Update under our lease: %v", err)
	}
	if rec, err := b.Get(ctx); err != nil || rec.Holder != "a" || rec.Term != 7 {
		t.Fatalf("Get = %+v, %v; want holder a, term 7", rec, err)
	}
	if err := b.Update(ctx, election.Record{Holder: "b", Term: 8}); !errors.Is(err, election.ErrLockLost) {
		t.Fatalf("Update without the lease = %v, want ErrLockLost (412)", err)
	}
	if err := b.Renew(ctx); !errors.Is(err, election.ErrLockLost) {
		t.Fatalf("Renew of a lease someone else holds = %v, want ErrLockLost", err)
	}

	// An operator breaks the lease: the holder's renew is a definite loss.
	if err := bloblock.Break(ctx, c, "leader"); err != nil {
		t.Fatalf("Break: %v", err)
	}
	err := a.Renew(ctx)
	if !errors.Is(err, election.ErrLockLost) {
		t.Fatalf("Renew after BreakLease(0) = %v, want ErrLockLost", err)
	}
	var se *bloblock.Error
	if !errors.As(err, &se) || se.Status != 409 || se.Code != "LeaseIsBrokenAndCannotBeRenewed" {
		t.Fatalf("Renew after break = %#v, want 409 LeaseIsBrokenAndCannotBeRenewed", err)
	}
	if !strings.Contains(err.Error(), "renew: 409 LeaseIsBrokenAndCannotBeRenewed") {
		t.Fatalf("error text %q is not the compact form", err)
	}
	// A broken lease is free: b takes it at once.
	if err := b.Acquire(ctx, 15*time.Second); err != nil {
		t.Fatalf("Acquire after break: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, election.ErrLockLost) {
		t.Fatalf("Release of a lease we lost = %v, want ErrLockLost", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := reqs.count("acquire 201"); n < 2 {
		t.Fatalf("observer saw %d successful acquires (201), want ≥ 2", n)
	}
	if n := reqs.count("acquire 409"); n < 1 {
		t.Fatalf("observer saw %d refused acquires (409), want ≥ 1", n)
	}
}

func TestLock_RefusesOutOfRangeLeaseLikeAzure(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	l := newLock(t, c)
	err := l.Acquire(ctx, 5*time.Second)
	var se *bloblock.Error
	if !errors.As(err, &se) || se.Status != 400 {
		t.Fatalf("Acquire(5s) = %v, want 400 from storage", err)
	}
	if errors.Is(err, election.ErrLockHeld) || errors.Is(err, election.ErrLockLost) {
		t.Fatalf("a 400 must not be classified as a definite lease answer: %v", err)
	}
}

func TestLock_TimeoutIsTransient(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t)
	l := newLock(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	err := l.Renew(ctx)
	if err == nil || errors.Is(err, election.ErrLockLost) || errors.Is(err, election.ErrLockHeld) {
		t.Fatalf("Renew with an expired context = %v, want a transient error", err)
	}
	if !strings.Contains(err.Error(), "timed out") && !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("timeout error %q does not say it timed out", err)
	}
}

func TestNewContainerClient_RejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  bloblock.ClientConfig
		want string
	}{
		{"malformed connection string", bloblock.ClientConfig{ConnectionString: "not a connection string", Container: "x"}, "malformed connection string"},
		{"neither source", bloblock.ClientConfig{Container: "x"}, "exactly one"},
		{"both sources", bloblock.ClientConfig{ConnectionString: server.ConnectionString(), AccountURL: "https://a.blob.core.windows.net", Container: "x"}, "exactly one"},
		{"empty container", bloblock.ClientConfig{ConnectionString: server.ConnectionString()}, "container name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := bloblock.NewContainerClient(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewContainerClient = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
