package chaos

import (
	"testing"
	"time"
)

func TestSupervisorFreeze_StopsTheSupervisorAloneAndResumesIt(t *testing.T) {
	p := startFixture(t, "graceful")
	f := &SupervisorFreeze{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if f.Kind() != KindSupervisorFreeze || f.Target() != p.Name() {
		t.Fatalf("kind %q target %q, want %q on %q", f.Kind(), f.Target(), KindSupervisorFreeze, p.Name())
	}
	if stopped, err := p.Stopped(); err != nil || !stopped {
		t.Fatalf("after Inject: stopped=%v err=%v, want the supervisor in state T", stopped, err)
	}
	if err := f.Inject(ctxT(t, time.Second)); err != ErrInjected {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	frozen := p.beats()
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), frozen); err != nil {
		t.Fatalf("thawed supervisor makes no progress: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second remove should be a no-op: %v", err)
	}
}
