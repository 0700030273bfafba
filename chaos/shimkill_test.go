package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/supervise"
)

// shimOf waits for the fixture's shim, its child (the "command") and its
// grandchild, and returns the three pids.
func shimOf(t *testing.T, p *proc) (shim, cmd, gc int) {
	t.Helper()
	waitFor(t, "the fixture's shim, command and grandchild", 10*time.Second, func() (bool, string) {
		s, err := ChildNamed(p.Pid(), supervise.ShimName)
		if err != nil {
			return false, err.Error()
		}
		c := childrenOf(s)
		if len(c) != 1 || fixtureDepth(c[0]) != "1" {
			return false, fmt.Sprintf("shim %d, its children %v", s, c)
		}
		g := childrenOf(c[0])
		if len(g) != 1 || fixtureDepth(g[0]) != "0" {
			return false, fmt.Sprintf("shim %d, command %d, its children %v", s, c[0], g)
		}
		shim, cmd, gc = s, c[0], g[0]
		return true, ""
	})
	// The fixture's own end kills the fixture alone: its shim's lineage
	// would outlive the test.
	t.Cleanup(func() {
		for pid, depth := range map[int]string{shim: "2", cmd: "1", gc: "0"} {
			if fixtureDepth(pid) == depth {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return shim, cmd, gc
}

// fixtureDepth is the CHAOS_FIXTURE_DEPTH a process of the fixture was
// started with ("" if none, or unreadable). A child that has it is the
// fixture's, not a transient one of the Go runtime's: before its first
// exec.Cmd.Start, a Go process forks a child that exits at once to probe
// clone(CLONE_PIDFD), and a reading of its children may meet that one
// (it shares its parent's memory, so its environment is the parent's).
func fixtureDepth(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "CHAOS_FIXTURE_DEPTH="); ok {
			return v
		}
	}
	return ""
}

// With Nest, the command's other processes are moved into a cgroup below
// the shim's, then the shim alone is SIGKILLed; the supervisor runs on.
func TestShimKill_NestsTheLineageThenKillsTheShimAlone(t *testing.T) {
	c := confineT(t)
	p := startFixture(t, "shimmed")
	shim, cmd, gc := shimOf(t, p)
	for _, pid := range []int{shim, cmd, gc} { // the shim's group cgroup, as a supervisor makes one
		if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	f := &ShimKill{Process: p, Nest: true}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if f.Kind() != KindShimKill || f.Target() != p.Name() || f.Shim != shim || len(f.Moved) != 1 || f.Moved[0] != gc {
		t.Fatalf("kind %q target %q shim %d moved %v, want %q on %q, shim %d, moved [%d]", f.Kind(), f.Target(), f.Shim, f.Moved, KindShimKill, p.Name(), shim, gc)
	}
	if filepath.Dir(f.Nested) != c.Dir {
		t.Fatalf("nested cgroup %s is not below the shim's %s", f.Nested, c.Dir)
	}
	if got := cgroupProcs(f.Nested); len(got) != 1 || got[0] != gc {
		t.Fatalf("nested cgroup holds %v, want [%d]", got, gc)
	}
	if ProcAlive(shim) {
		t.Fatalf("shim %d still runs after Inject returned", shim)
	}
	if !ProcAlive(gc) {
		t.Fatalf("the grandchild %d died with the shim: the fault killed more than the shim", gc)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()); err != nil {
		t.Fatalf("the supervisor stopped with its shim: %v", err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := (&ShimKill{Process: p}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("inject with no shim = %v, want ErrNotRunning", err)
	}
}
