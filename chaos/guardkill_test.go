package chaos

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/supervise"
)

func TestGuardKill_KillsTheGuardAloneAndLeavesTheSupervisorRunning(t *testing.T) {
	p := startFixture(t, "guarded")
	guard := guardOf(t, p)
	f := &GuardKill{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if f.Kind() != KindGuardKill || f.Target() != p.Name() || f.Guard != guard {
		t.Fatalf("kind %q target %q guard %d, want %q on %q, guard %d", f.Kind(), f.Target(), f.Guard, KindGuardKill, p.Name(), guard)
	}
	if ProcAlive(guard) {
		t.Fatalf("guard %d still runs after Inject returned", guard)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	// The supervisor was not touched: it beats on.
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()); err != nil {
		t.Fatalf("the supervisor stopped with its guard: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	// No guard left: a second fault finds none to kill.
	if err := (&GuardKill{Process: p}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("inject with no guard = %v, want ErrNotRunning", err)
	}
}

// guardOf waits for the guard of the fixture p and returns its pid.
func guardOf(t *testing.T, p *proc) int {
	t.Helper()
	var guard int
	waitFor(t, "the fixture's guard", 10*time.Second, func() (bool, string) {
		g, err := ChildNamed(p.Pid(), supervise.GuardName)
		guard = g
		return err == nil, fmt.Sprint(err)
	})
	return guard
}
