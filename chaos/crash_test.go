package chaos

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestCrash_KillsWithSIGKILLAndRestarts(t *testing.T) {
	p := startFixture(t, "graceful")
	f := &Crash{Restart: true, Process: p}
	if f.Kind() != KindCrash || f.Target() != "fixture.1" {
		t.Fatalf("kind %q target %q, want crash fixture.1", f.Kind(), f.Target())
	}

	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Inject returned but the process has not exited")
	}
	var ee *exec.ExitError
	if err := p.lastExit(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit = %v, want death by SIGKILL", err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}

	if err := f.Remove(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatalf("restarted fixture: %v", err)
	}
	if p.Name() != "fixture.2" || f.Target() != "fixture.1" {
		t.Fatalf("after restart name %q target %q, want fixture.2 and fixture.1", p.Name(), f.Target())
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second remove should be a no-op: %v", err)
	}
}

func TestCrash_WithoutRestartLeavesItDead(t *testing.T) {
	p := startFixture(t, "graceful")
	f := &Crash{Process: p}
	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if running(p) == nil {
		t.Fatal("process runs again although Restart is false")
	}
	if err := (&Crash{Process: p}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("crash of a dead process = %v, want ErrNotRunning", err)
	}
}

func TestCrash_HonoursCancelledContext(t *testing.T) {
	p := startFixture(t, "graceful")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &Crash{Process: p}
	if err := f.Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("inject with a cancelled context = %v, want context.Canceled", err)
	}
	if running(p) != nil {
		t.Fatal("a cancelled Inject killed the process")
	}
	if err := (&Crash{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("crash without a process = %v, want ErrNoTarget", err)
	}
}
