package chaos

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStop_SIGTERMExitsCleanlyAndRestarts(t *testing.T) {
	p := startFixture(t, "graceful")
	f := &Stop{Restart: true, Process: p}
	if f.Kind() != KindGraceful {
		t.Fatalf("kind %q, want graceful", f.Kind())
	}
	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if err := p.lastExit(); err != nil {
		t.Fatalf("exit after SIGTERM = %v, want a clean exit 0", err)
	}
	if err := f.Remove(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatalf("restarted fixture: %v", err)
	}
}

func TestStop_ProcessIgnoringSIGTERMIsReported(t *testing.T) {
	p := startFixture(t, "stubborn")
	f := &Stop{Grace: 300, Process: p}
	start := time.Now()
	err := f.Inject(ctxT(t, 10*time.Second))
	if !errors.Is(err, ErrStillAlive) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("inject = %v, want ErrStillAlive after the grace period", err)
	}
	// 5 s tells giving up after the grace from waiting out the 10 s
	// context: no stall needed.
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about the 300 ms grace", d)
	}
	if running(p) != nil {
		t.Fatal("Stop killed a process that ignored SIGTERM; it must leave it running")
	}
}

func TestStop_HonoursContext(t *testing.T) {
	p := startFixture(t, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := (&Stop{Process: p}).Inject(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("inject = %v, want the context's deadline", err)
	}
}
