package chaos

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// A refused acquire gets storage's kind of error answer (status, code,
// message) and is not applied: the lease stays free. Other operations pass;
// Count bounds the refusals; Remove ends them.
func TestRefusal_AnswersLikeStorageAndAppliesNothing(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f := &Refusal{Op: OpAcquire, Status: http.StatusBadRequest, Code: "InvalidHeaderValue", Message: "The API version is not supported.", Count: 2, Proxy: hp}
	if f.Kind() != KindRefusal || f.Target() != hp.Name() {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	lc := leaseVia(t, hp.Addr(), direct, "leader")
	// 1. Refused, as storage words it.
	_, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || !bloberror.HasCode(err, "InvalidHeaderValue") {
		t.Fatalf("refused acquire = %v, want 400 InvalidHeaderValue", err)
	}
	if body, _ := runtime.Payload(re.RawResponse); !strings.Contains(string(body), "<Message>The API version is not supported.</Message>") {
		t.Fatalf("refusal body %q lacks the message", body)
	}
	// 2. Not applied: another client acquires the lease.
	other := leaseVia(t, directAddr(t), direct, "leader")
	if _, err := other.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatalf("the refused acquire was applied: %v", err)
	}
	if _, err := other.ReleaseLease(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	// 3. Other operations pass.
	via := containerVia(t, hp.Addr(), containerNameOf(direct))
	if _, err := via.NewBlobClient("leader").GetProperties(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatalf("a read through the refusal of acquires: %v", err)
	}
	// 4. Count 2: the second is refused, the third goes through.
	if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); !bloberror.HasCode(err, "InvalidHeaderValue") {
		t.Fatalf("second acquire = %v, want refused", err)
	}
	if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatalf("third acquire (past Count) = %v, want it applied", err)
	}
	if rs, err := f.AwaitRefused(ctxT(t, time.Second), 2); err != nil || len(rs) != 2 || rs[0].Op != OpAcquire || rs[0].Status != http.StatusBadRequest {
		t.Fatalf("refused %+v (%v), want two acquires answered 400", rs, err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}

func TestRefusal_RemoveStopsRefusingAndBadParameters(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	via := containerVia(t, hp.Addr(), containerNameOf(direct))
	f := &Refusal{Op: OpAny, Status: http.StatusServiceUnavailable, Code: "ServerBusy", Proxy: hp}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := probe(ctxT(t, 5*time.Second), via); !bloberror.HasCode(err, "ServerBusy") {
			t.Fatalf("probe %d through Refusal{Op: *} = %v, want 503 ServerBusy", i, err)
		}
	}
	if _, err := f.AwaitRefused(ctxT(t, time.Second), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*Refusal{
		{Op: "", Status: 400, Code: "X", Proxy: hp},
		{Op: OpAcquire, Status: 200, Code: "X", Proxy: hp},
		{Op: OpAcquire, Status: 400, Proxy: hp},
		{Op: OpAcquire, Status: 400, Code: "X", Count: -1, Proxy: hp},
	} {
		if err := bad.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Inject = %v, want ErrInvalid", bad, err)
		}
	}
	if err := (&Refusal{Op: OpAcquire, Status: 400, Code: "X"}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("Inject without a proxy = %v, want ErrNoTarget", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&Refusal{Op: OpAcquire, Status: 400, Code: "X", Proxy: hp}).Inject(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inject with a cancelled context = %v", err)
	}
}
