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
	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// These tests run against a real Azurite that TestMain starts and stops.
// Each test uses its own container so they can run in parallel.

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

// waitFor polls cond until it holds: for timeout plus the stall a probe of
// this machine and of the package's Azurite, running for the wait,
// measured meanwhile (stalltest's Probe.Await: at most 3×, then
// inconclusive, a failure, never a pass). Bounds the design states are
// judged by Probe.Bound where they are asserted.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	stalltest.Await(t, stalltest.Config{Server: server.BlobEndpoint()}, what, timeout, cond)
}

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
	idA, idB := uuid.NewString(), uuid.NewString()

	// The first acquire creates the container and the blob.
	if err := a.Acquire(ctx, idA, 15*time.Second); err != nil {
		t.Fatalf("first Acquire on a missing container: %v", err)
	}
	if err := b.Acquire(ctx, idB, 15*time.Second); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Acquire while held = %v, want lease.ErrHeld", err)
	}
	if err := a.Acquire(ctx, idA, 15*time.Second); err != nil {
		t.Fatalf("re-acquire of our own lease (same ID) = %v, want nil", err)
	}
	if err := a.Update(ctx, idA, lease.Record{Holder: "a", Term: 7, Acquired: time.Now()}); err != nil {
		t.Fatalf("Update under our lease: %v", err)
	}
	if rec, err := b.Get(ctx); err != nil || rec.Holder != "a" || rec.Term != 7 {
		t.Fatalf("Get = %+v, %v; want holder a, term 7", rec, err)
	}
	if err := b.Update(ctx, idB, lease.Record{Holder: "b", Term: 8}); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Update without the lease = %v, want lease.ErrLost (412)", err)
	}
	if err := b.Renew(ctx, idB); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Renew of a lease someone else holds = %v, want lease.ErrLost", err)
	}

	// An operator breaks the lease: the holder's renew is a definite loss.
	if err := forceBreak(ctx, c); err != nil {
		t.Fatalf("Break: %v", err)
	}
	err := a.Renew(ctx, idA)
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Renew after BreakLease(0) = %v, want lease.ErrLost", err)
	}
	var se *bloblock.Error
	if !errors.As(err, &se) || se.Status != 409 || se.Code != "LeaseIsBrokenAndCannotBeRenewed" {
		t.Fatalf("Renew after break = %#v, want 409 LeaseIsBrokenAndCannotBeRenewed", err)
	}
	if !strings.Contains(err.Error(), "renew: 409 LeaseIsBrokenAndCannotBeRenewed") {
		t.Fatalf("error text %q is not the compact form", err)
	}
	// A broken lease is free: b takes it at once.
	if err := b.Acquire(ctx, idB, 15*time.Second); err != nil {
		t.Fatalf("Acquire after break: %v", err)
	}
	if err := a.Release(ctx, idA); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Release of a lease we lost = %v, want lease.ErrLost", err)
	}
	if err := b.Release(ctx, idB); err != nil {
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
	err := l.Acquire(ctx, uuid.NewString(), 5*time.Second)
	var se *bloblock.Error
	if !errors.As(err, &se) || se.Status != 400 {
		t.Fatalf("Acquire(5s) = %v, want 400 from storage", err)
	}
	if errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrLost) {
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
	err := l.Renew(ctx, uuid.NewString())
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrHeld) {
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

// A release held in flight from an ended leadership arrives after the
// same process leads again. With one lease ID per leadership storage
// refuses it; the current lease survives.
func TestLock_LateReleaseOfAnEndedLeadershipCannotFreeALaterOne(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	a, b := newLock(t, c), newLock(t, c)
	first, second := uuid.NewString(), uuid.NewString()
	if err := a.Acquire(ctx, first, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	// The first leadership ends; its release is held in flight. The lease is
	// still live at storage, so nobody else can take it…
	if err := b.Acquire(ctx, uuid.NewString(), 15*time.Second); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Acquire by b while a's lease is live = %v, want lease.ErrHeld", err)
	}
	// …until it is released or expires. Model the release landing first (as
	// a fresh Acquire would need), then the next leadership of the same
	// process, with its own ID.
	if err := a.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := a.Acquire(ctx, second, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	// A duplicate of the first release (retried by a proxy, delivered late).
	err := a.Release(ctx, first)
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("late Release with the ended leadership's ID = %v, want a refusal (lease.ErrLost)", err)
	}
	if err := b.Acquire(ctx, uuid.NewString(), 15*time.Second); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("after the late release b could acquire (%v): the later leadership's lease was freed", err)
	}
	if err := a.Renew(ctx, second); err != nil {
		t.Fatalf("the later leadership cannot renew after the late release: %v", err)
	}
}

// Deleting the lock's container (or blob) under a holder is a definite
// loss at its next renew or guarded write, and the recreated record never
// yields a term at or below one handed out before.
func TestLock_DeletedContainerOrBlobIsALossAndTermsStayAbove(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"container", "blob"} {
		t.Run(what, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			c, _ := newContainer(t)
			a := newLock(t, c)
			id := uuid.NewString()
			if err := a.Acquire(ctx, id, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			before := time.Now().UnixMilli()
			if err := a.Update(ctx, id, lease.Record{Holder: "a", Term: before, Acquired: time.Now()}); err != nil {
				t.Fatal(err)
			}
			switch what {
			case "container":
				if _, err := c.Delete(ctx, nil); err != nil {
					t.Fatal(err)
				}
			case "blob":
				if err := forceBreak(ctx, c); err != nil {
					t.Fatal(err)
				}
				if _, err := c.NewBlobClient("leader").Delete(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Renew(ctx, id); !errors.Is(err, lease.ErrLost) {
				t.Fatalf("Renew after the %s was deleted = %v, want lease.ErrLost (404 is a definite loss)", what, err)
			}
			if err := a.Update(ctx, id, lease.Record{Holder: "a", Term: before + 1}); !errors.Is(err, lease.ErrLost) {
				t.Fatalf("guarded Update after the %s was deleted = %v, want lease.ErrLost", what, err)
			}
			if err := a.Release(ctx, id); !errors.Is(err, lease.ErrLost) {
				t.Fatalf("Release after the %s was deleted = %v, want lease.ErrLost", what, err)
			}
			// Recreated by the next acquire (a deleted container may take a
			// moment before Azurite lets it be created again).
			b := newLock(t, c)
			waitFor(t, "the lock recreated by an acquire after deleting its "+what, 20*time.Second, func() (bool, string) {
				err := b.Acquire(ctx, uuid.NewString(), 15*time.Second)
				return err == nil, fmt.Sprint(err)
			})
			rec, err := b.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Term < before {
				t.Fatalf("recreated record's term floor %d is below the term %d handed out before the delete", rec.Term, before)
			}
		})
	}
}

// A term write storage cannot carry (metadata with non-ASCII characters
// breaks the signed request: 403) is ErrRejected, not transient and not a
// loss, so the elector surfaces it in /healthz and /readyz.
func TestLock_MetadataStorageCannotCarryIsRejected(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	l := newLock(t, c)
	id := uuid.NewString()
	if err := l.Acquire(ctx, id, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	err := l.Update(ctx, id, lease.Record{Holder: "wörker-ü", Term: 1, Acquired: time.Now()})
	if !errors.Is(err, lease.ErrRejected) || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Update with non-ASCII metadata = %v, want ErrRejected", err)
	}
}

// forceBreak is an operator's BreakLease(0) on the blob "leader": whatever
// lease holds it ends at once.
func forceBreak(ctx context.Context, c *container.Client) error {
	l, err := bloblock.New(c, "leader")
	if err != nil {
		return err
	}
	return l.Break(ctx, "", 0)
}

// A nil container client is refused where it is given, not a panic deep in
// the SDK at the first request.
func TestNew_RefusesANilClient(t *testing.T) {
	t.Parallel()
	if l, err := bloblock.New(nil, "leader"); err == nil || l != nil {
		t.Fatalf("New(nil, leader) = %v, %v; want an error", l, err)
	}
}
