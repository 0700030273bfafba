package chaos

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOutage_CutsEveryWorkerButNotDirectClients(t *testing.T) {
	direct, px1 := fixtureStorage(t)
	srv := startAzurite(t)
	px2 := newProxy(t, px1.Name()+"-2", fmt.Sprintf("%s:%d", srv.Host, srv.Port))
	name := containerNameOf(direct)
	vias := []*Proxy{px1, px2}

	f := &Outage{Proxies: vias}
	if f.Target() != TargetAll {
		t.Fatalf("target %q, want %q", f.Target(), TargetAll)
	}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, px := range vias {
		if _, err := timedProbe(containerVia(t, px.Addr(), name), 500*time.Millisecond); err == nil {
			t.Fatalf("storage reachable through %s during the outage", px.Name())
		}
	}
	if err := probe(ctxT(t, 5*time.Second), direct); err != nil {
		t.Fatalf("a direct client lost storage too: %v", err)
	}

	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, px := range vias {
		if err := eventually(ctxT(t, 5*time.Second), containerVia(t, px.Addr(), name)); err != nil {
			t.Fatalf("%s after the outage: %v", px.Name(), err)
		}
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second remove should be a no-op: %v", err)
	}
}

func TestOutage_FailedInjectLeavesNothingBehind(t *testing.T) {
	_, px := fixtureStorage(t)
	// The second target is missing: the first, already cut, must be healed.
	f := &Outage{Proxies: []*Proxy{px, nil}}
	if err := f.Inject(ctxT(t, 5*time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("inject = %v, want ErrNoTarget", err)
	}
	if got := px.Toxics(); len(got) != 0 || !px.Enabled() {
		t.Fatalf("failed outage left %v on %s (enabled=%v)", got, px.Name(), px.Enabled())
	}
	if err := (&Outage{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("outage without proxies = %v, want ErrNoTarget", err)
	}
}
