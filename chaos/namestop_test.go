package chaos

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// `killall -STOP NAME` on one tree: only the processes of that name stop.
func TestNameStop_StopsOnlyTheNamedProcessesOfTheTree(t *testing.T) {
	p := startFixture(t, "namer")
	var sleeper int
	waitFor(t, "the fixture's sleep child", 5*time.Second, func() (bool, string) {
		for _, c := range childrenOf(p.Pid()) {
			if commOf(c) == "sleep" {
				sleeper = c
			}
		}
		return sleeper != 0, fmt.Sprintf("children %v", childrenOf(p.Pid()))
	})
	f := &NameStop{Process: p, Name: "sleep"}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if st, _ := ProcStopped(sleeper); !st || len(f.Stopped) != 1 || f.Stopped[0] != sleeper {
		t.Fatalf("sleep %d stopped=%v, fault stopped %v", sleeper, st, f.Stopped)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()); err != nil {
		t.Fatalf("the fixture (another name) stopped too: %v", err)
	}
	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if st, _ := ProcStopped(sleeper); st {
		t.Fatalf("sleep %d still stopped after Remove", sleeper)
	}
	if err := (&NameStop{Process: p, Name: "no-such-name"}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("inject with no process of that name = %v, want ErrNotRunning", err)
	}
	if err := (&NameStop{Process: p}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("inject without a name = %v, want ErrInvalid", err)
	}
	if f.Kind() != KindNameStop || f.Target() != p.Name() {
		t.Fatal("kind or target")
	}
}
