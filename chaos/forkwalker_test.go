package chaos

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The walker hops from pid to pid, each hop in a new session, reporting as
// it goes; confined, it dies with its Confine and nothing of it is left.
func TestForkWalker_HopsFromPidToPidAndDiesWithItsConfine(t *testing.T) {
	c := confineT(t)
	p := &proc{t: t, mode: "walker", beat: t.TempDir() + "/beat"}
	// The fixture starts confined: the walker is born in the cgroup.
	p.wrap = func(argv []string) ([]string, error) { return c.Wrap(argv) }
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatal(err)
	}
	f := &ForkWalker{PID: p.Pid(), Name: p.Name()}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	pids := map[string]bool{}
	waitFor(t, "the walker's reports from 3 pids", 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(p.beat + ".walk")
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, `"pid":`); i >= 0 {
				pids[strings.SplitN(l[i+6:], ",", 2)[0]] = true
			}
		}
		return len(pids) >= 3, fmt.Sprintf("%d pid(s)", len(pids))
	})
	sid, _ := getsid(p.Pid())
	for s := range pids {
		pid, _ := strconv.Atoi(s)
		if ws, err := getsid(pid); err == nil && ws == sid {
			t.Errorf("walker hop %d is in the fixture's session %d: it did not call setsid", pid, sid)
		}
	}
	if err := c.Kill(5 * time.Second); err != nil {
		t.Fatalf("the Confine did not end the walker: %v", err)
	}
	if f.Kind() != KindForkWalker || f.Target() != p.Name() {
		t.Fatal("kind or target")
	}
	if err := (&ForkWalker{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("inject without a pid = %v, want ErrInvalid", err)
	}
}
