package chaos

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPause_StopsAndResumesTheProcess(t *testing.T) {
	p := startFixture(t, "graceful")
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatal(err)
	}
	f := &Pause{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	// Read the kernel's view ourselves rather than trusting Inject.
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	if stopped, err := ProcStopped(pid); err != nil || !stopped {
		t.Fatalf("after Inject: stopped=%v err=%v, want the process in state T", stopped, err)
	}
	frozen := p.beats()

	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if stopped, err := ProcStopped(pid); err != nil || stopped {
		t.Fatalf("after Remove: stopped=%v err=%v, want it running", stopped, err)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), frozen); err != nil {
		t.Fatalf("resumed process makes no progress: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second remove should be a no-op: %v", err)
	}
}

func TestPause_HonoursCancelledContext(t *testing.T) {
	p := startFixture(t, "graceful")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &Pause{Process: p}
	if err := f.Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("inject = %v, want context.Canceled", err)
	}
	if stopped, _ := p.Stopped(); stopped {
		t.Fatal("a cancelled Inject stopped the process")
	}
}

func TestPause_RemoveAfterExitIsANoop(t *testing.T) {
	p := startFixture(t, "graceful")
	f := &Pause{Process: p}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	p.kill()
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove after exit = %v, want nil", err)
	}
}
