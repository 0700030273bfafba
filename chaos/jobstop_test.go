package chaos

import (
	"errors"
	"testing"
	"time"
)

// A process that keeps the default action of SIGTSTP (the fixture, like
// every supervisor before job control was handled) is stopped by the fault;
// Remove continues it.
func TestJobStop_StopsAProcessThatKeepsTheDefaultAction(t *testing.T) {
	for _, sig := range []string{"", "SIGTTIN", "SIGTTOU"} {
		t.Run("signal="+sig, func(t *testing.T) {
			p := startFixture(t, "graceful")
			f := &JobStop{Signal: sig, Process: p}
			if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
				t.Fatalf("inject: %v", err)
			}
			ctx := ctxT(t, 5*time.Second)
			for {
				if stopped, _ := p.Stopped(); stopped {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("%q did not stop the fixture within 5s", sig)
				}
				time.Sleep(5 * time.Millisecond)
			}
			frozen := p.beats()
			if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
				t.Fatalf("remove: %v", err)
			}
			if err := p.waitBeating(ctxT(t, 5*time.Second), frozen); err != nil {
				t.Fatalf("continued process makes no progress: %v", err)
			}
		})
	}
}

func TestJobStop_RefusesAnotherSignal(t *testing.T) {
	f := &JobStop{Signal: "SIGKILL"}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("inject = %v, want ErrInvalid", err)
	}
}
