package chaos

import (
	"testing"
	"time"
)

// The shim alone is stopped, then continued; the supervisor runs on.
func TestShimStop_StopsTheShimAloneUntilRemoved(t *testing.T) {
	p := startFixture(t, "shimmed")
	shim, cmd, _ := shimOf(t, p)
	f := &ShimStop{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if st, _ := ProcStopped(shim); !st || f.Shim != shim || f.Kind() != KindShimStop || f.Target() != p.Name() {
		t.Fatalf("shim %d stopped=%v, fault shim %d kind %q target %q", shim, st, f.Shim, f.Kind(), f.Target())
	}
	if st, _ := ProcStopped(cmd); st {
		t.Fatalf("the shim's child %d was stopped too", cmd)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()); err != nil {
		t.Fatalf("the supervisor stopped with its shim: %v", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if st, _ := ProcStopped(shim); st {
		t.Fatalf("shim %d still stopped after Remove", shim)
	}
}
