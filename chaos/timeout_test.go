package chaos

import (
	"testing"
	"time"
)

func TestTimeout_DownstreamSwallowsTheAnswerButNotTheRequest(t *testing.T) {
	direct, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerNameOf(direct))

	f := &Timeout{Proxy: px} // downstream, never closes
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := put(via, "landed", 700*time.Millisecond); err == nil {
		t.Fatal("write through a black-holed answer stream succeeded")
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("write failed after %v, want it to hang until the client's 700 ms deadline", d)
	}
	// The request itself went through: storage has the blob.
	if !exists(t, direct, "landed") {
		t.Fatal("a downstream-only timeout stopped the request from reaching storage")
	}

	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
}

func TestTimeout_UpstreamStopsTheRequestAndClosesAfterTimeout(t *testing.T) {
	direct, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerNameOf(direct))

	f := &Timeout{Timeout: 200, Stream: Upstream, Proxy: px}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := put(via, "lost", 5*time.Second); err == nil {
		t.Fatal("write through a black-holed request stream succeeded")
	}
	// The proxy closes the connection after 200 ms: the client hears of it
	// well before its own 5 s deadline (3 s tells the two apart on any
	// machine: no stall needed).
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("write failed after %v, want the 200 ms toxic timeout to close it", d)
	}
	if exists(t, direct, "lost") {
		t.Fatal("an upstream timeout let the request reach storage")
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctxT(t, 5*time.Second), via); err != nil {
		t.Fatal(err)
	}
}
