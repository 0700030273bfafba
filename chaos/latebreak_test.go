package chaos

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// A follower's break that its client gave up on still reaches storage later
// and breaks whatever lease holds the blob then; the next break passes.
func TestLateBreak_BreakArrivesAfterTheClientGaveUp(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	holder := leaseVia(t, directAddr(t), direct, "leader")
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatal(err)
	}
	breaker := leaseVia(t, hp.Addr(), direct, "leader")
	f := &LateBreak{Delay: 1500, Count: 1, Proxy: hp}
	if f.Kind() != KindLateBreak || f.Target() != hp.Name() {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	// 1. The break times out at the client: the lease is still held.
	zero := int32(0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := breaker.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &zero})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held break returned %v, want the client's deadline", err)
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatalf("renew while the break is held: %v", err)
	}
	// 2. It arrives later and breaks the lease.
	ds, err := f.AwaitDelivered(ctxT(t, 5*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[0]; d.Op != OpBreak || d.Status != http.StatusAccepted || d.Client || d.Sent.Sub(d.Held) < 1400*time.Millisecond {
		t.Fatalf("delivery %+v: want the break sent ≥ 1.5 s after it was held, answered 202, the client gone", d)
	}
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); !bloberror.HasCode(err, bloberror.LeaseIsBrokenAndCannotBeRenewed) {
		t.Fatalf("renew after the late break = %v, want LeaseIsBrokenAndCannotBeRenewed", err)
	}
	// 3. Count 1: the next break is not held.
	if _, err := breaker.BreakLease(ctxT(t, 5*time.Second), &lease.BlobBreakOptions{BreakPeriod: &zero}); err != nil && !bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation) {
		t.Fatalf("second break: %v", err)
	}
	// Not held: the fault's own count says so (a time would need the stall).
	if n := f.Held(); n != 1 {
		t.Fatalf("%d breaks held; want the second not held", n)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestLateBreak_RefusesBadParams(t *testing.T) {
	_, hp := fixtureHTTP(t)
	for _, f := range []*LateBreak{{Delay: -1, Proxy: hp}, {Delay: 10, Count: -1, Proxy: hp}} {
		if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Inject(%+v) = %v, want ErrInvalid", f, err)
		}
	}
	if err := (&LateBreak{Delay: 10}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Errorf("Inject without a proxy = %v, want ErrNoTarget", err)
	}
}
