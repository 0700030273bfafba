package chaos

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// The hole-1 shape: a release the client gave up on arrives later and frees
// the lease, whatever happened in between.
func TestLateDelivery_ReleaseArrivesAfterTheClientGaveUp(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	holder := heldVia(t, hp, direct)
	f := &LateDelivery{Op: OpRelease, Delay: 1500, Count: 1, Proxy: hp}
	if f.Kind() != KindLateDelivery || f.Target() != hp.Name() {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	// 1. The client's release times out: it cannot know whether it landed.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := holder.ReleaseLease(ctx, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held release returned %v, want the client's deadline", err)
	}
	// 2. Meanwhile the lease is still held at storage.
	rival := leaseVia(t, directAddr(t), direct, "leader")
	if _, err := rival.AcquireLease(ctxT(t, 5*time.Second), 15, nil); !bloberror.HasCode(err, bloberror.LeaseAlreadyPresent) {
		t.Fatalf("rival acquire while the release is held = %v, want LeaseAlreadyPresent", err)
	}
	// 3. Later the release arrives on its own connection and frees the lease.
	ds, err := f.AwaitDelivered(ctxT(t, 5*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	if d.Op != OpRelease || d.Status != http.StatusOK || d.Client || d.Sent.Sub(d.Held) < 1400*time.Millisecond {
		t.Fatalf("delivery %+v: want the release sent ≥ 1.5 s after it was held, answered 200, with the client gone", d)
	}
	if _, err := rival.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatalf("rival acquire after the late release: %v", err)
	}
	// 4. Count 1: the next release passes at once (and finds the rival's lease).
	if _, err := holder.ReleaseLease(ctxT(t, 5*time.Second), nil); !bloberror.HasCode(err, bloberror.LeaseIDMismatchWithLeaseOperation) {
		t.Fatalf("second release = %v, want LeaseIdMismatchWithLeaseOperation straight from storage", err)
	}
	// Not held: the fault's own count says so (a time would need the stall).
	if n := f.Held(); n != 1 {
		t.Fatalf("%d releases held; want the second not held", n)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
}

// With Delay below the client's timeout the request is only slow: the client
// gets storage's answer.
func TestLateDelivery_ShortDelayAnswersTheClient(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, hp := fixtureHTTP(t)
		if err := put(direct, "b", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		lc := leaseVia(t, hp.Addr(), direct, "b")
		f := &LateDelivery{Op: OpAcquire, Delay: 400, Proxy: hp}
		if err := f.Inject(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Fatalf("acquire answered after %v, want ≥ 400 ms", d)
		}
		// Count 0: every acquire is held; other operations pass.
		if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if _, err := lc.RenewLease(ctxT(t, 5*time.Second), nil); err != nil {
			t.Fatalf("renew: %v", err)
		}
		// Not held: answered well inside the 400 ms an acquire is held (judged
		// with the stall measured meanwhile).
		if !sp.Bound(t, "the renew's answer, not held (bound 300 ms)", start, 300*time.Millisecond, time.Now()) {
			return
		}
		ds, err := f.AwaitDelivered(ctxT(t, time.Second), 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if !d.Client || d.Status != http.StatusCreated {
				t.Fatalf("delivery %+v: want answered 201 to a waiting client", d)
			}
		}
		if err := f.Remove(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
	})
}

// Remove stops holding new requests and waits for the held ones, within its
// context; Inject and Remove honour cancellation; bad parameters are refused.
func TestLateDelivery_RemoveWaitsForHeldRequestsAndHonoursContext(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, hp := fixtureHTTP(t)
		if err := put(direct, "b", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		lc := leaseVia(t, hp.Addr(), direct, "b")
		f := &LateDelivery{Op: OpAny, Delay: 1000, Proxy: hp}
		if err := f.Inject(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
			t.Fatalf("second Inject = %v, want ErrInjected", err)
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, _ = lc.AcquireLease(ctx, 15, nil)
		}()
		if err := f.AwaitHeld(ctxT(t, 5*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := f.Remove(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Remove with a held request and a 50 ms context = %v, want its deadline", err)
		}
		// Removed: new requests pass at once; the held acquire still lands.
		start := time.Now()
		if err := probe(ctxT(t, 5*time.Second), containerVia(t, hp.Addr(), containerNameOf(direct))); err != nil {
			t.Fatalf("probe after Remove: %v", err)
		}
		// Not held: answered well inside the 1 s a request was held (judged
		// with the stall measured meanwhile).
		if !sp.Bound(t, "a request's answer after Remove, not held (bound 500 ms)", start, 500*time.Millisecond, time.Now()) {
			return
		}
		if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
			t.Fatalf("Remove waiting for the held acquire: %v", err)
		}
		if ds := f.Deliveries(); len(ds) != 1 || ds[0].Status != http.StatusCreated {
			t.Fatalf("deliveries %+v, want the held acquire granted (201)", ds)
		}

		done, cancelled := context.WithCancel(context.Background())
		cancelled()
		if err := (&LateDelivery{Op: OpRenew, Proxy: hp}).Inject(done); !errors.Is(err, context.Canceled) {
			t.Fatalf("Inject with a cancelled context = %v", err)
		}
		for _, bad := range []*LateDelivery{
			{Op: "lease", Proxy: hp},
			{Op: OpRenew, Delay: -1, Proxy: hp},
			{Op: OpRenew, Count: -1, Proxy: hp},
		} {
			if err := bad.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
				t.Errorf("%+v: Inject = %v, want ErrInvalid", bad, err)
			}
		}
		if err := (&LateDelivery{Op: OpRenew}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
			t.Errorf("no proxy: Inject = %v, want ErrNoTarget", err)
		}
	})
}
