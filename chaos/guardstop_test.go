package chaos

import (
	"testing"
	"time"
)

// The guard alone is stopped, then continued; the supervisor runs on.
func TestGuardStop_StopsTheGuardAloneUntilRemoved(t *testing.T) {
	p := startFixture(t, "guarded")
	guard := guardOf(t, p)
	f := &GuardStop{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if st, _ := ProcStopped(guard); !st || f.Guard != guard || f.Kind() != KindGuardStop || f.Target() != p.Name() {
		t.Fatalf("guard %d stopped=%v, fault guard %d kind %q target %q", guard, st, f.Guard, f.Kind(), f.Target())
	}
	if st, _ := ProcStopped(p.Pid()); st {
		t.Fatalf("the supervisor %d was stopped with its guard", p.Pid())
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()); err != nil {
		t.Fatalf("the supervisor stopped with its guard: %v", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if st, _ := ProcStopped(guard); st {
		t.Fatalf("guard %d still stopped after Remove", guard)
	}
}
