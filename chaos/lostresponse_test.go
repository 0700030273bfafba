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

// An acquire that won at storage but whose answer is lost: the client sees a
// fast connection error, the lease is held, and a retry with the same lease
// ID simply gets it (no ghost lease).
func TestLostResponse_GrantedAcquireTakesEffectUnseen(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		direct, hp := fixtureHTTP(t)
		px := newProxy(t, "chain-"+containerNameOf(direct), hp.Addr()) // the cluster's chain
		if err := put(direct, "leader", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		f := &LostResponse{Op: OpAcquire, Status: http.StatusCreated, Count: 1, Proxy: hp}
		if f.Kind() != KindLostResponse || f.Target() != hp.Name() {
			t.Fatalf("kind %q target %q", f.Kind(), f.Target())
		}
		if err := f.Inject(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		// 1. A refused acquire (409) is not the selected status: its answer passes.
		other := leaseVia(t, directAddr(t), direct, "leader")
		if _, err := other.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
			t.Fatal(err)
		}
		lc := leaseVia(t, px.Addr(), direct, "leader")
		if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); !bloberror.HasCode(err, bloberror.LeaseAlreadyPresent) {
			t.Fatalf("acquire of a held lease = %v, want LeaseAlreadyPresent unharmed", err)
		}
		if _, err := other.ReleaseLease(ctxT(t, 5*time.Second), nil); err != nil {
			t.Fatal(err)
		}
		// 2. The granted acquire: the client sees a fast error, not an answer.
		start := time.Now()
		_, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil)
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire with its answer dropped = %v after %v, want a fast connection error", err, time.Since(start))
		}
		if !sp.Bound(t, "the acquire's connection error, its answer dropped (bound 1 s, its context 5 s)", start, time.Second, time.Now()) {
			return
		}
		ds := f.Dropped()
		if len(ds) != 1 || ds[0].Op != OpAcquire || ds[0].Status != http.StatusCreated {
			t.Fatalf("dropped %+v, want one granted acquire", ds)
		}
		// 3. It took effect: the lease is held.
		if _, err := other.AcquireLease(ctxT(t, 5*time.Second), 15, nil); !bloberror.HasCode(err, bloberror.LeaseAlreadyPresent) {
			t.Fatalf("rival acquire after the lost answer = %v, want LeaseAlreadyPresent", err)
		}
		// 4. Count 1: the retry with the same lease ID gets its answer.
		if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
			t.Fatalf("retry with the same lease ID: %v", err)
		}
		if err := f.Remove(ctxT(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := f.Remove(ctxT(t, time.Second)); err != nil {
			t.Fatalf("second Remove: %v", err)
		}
	})
}

func TestLostResponse_RemoveStopsDroppingAndBadParameters(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	via := containerVia(t, hp.Addr(), containerNameOf(direct))
	f := &LostResponse{Op: OpAny, Proxy: hp}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := probe(ctxT(t, 5*time.Second), via); err == nil {
			t.Fatalf("probe %d got an answer through LostResponse{Op: *}", i)
		}
	}
	if _, err := f.AwaitDropped(ctxT(t, time.Second), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*LostResponse{
		{Op: "", Proxy: hp},
		{Op: OpAcquire, Status: 42, Proxy: hp},
		{Op: OpAcquire, Count: -2, Proxy: hp},
	} {
		if err := bad.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Inject = %v, want ErrInvalid", bad, err)
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&LostResponse{Op: OpAcquire, Proxy: hp}).Inject(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inject with a cancelled context = %v", err)
	}
}
