package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cmdProcess is a Process backed by an exec.Cmd that is already started.
type cmdProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *cmdProcess) Name() string                      { return "ns" }
func (p *cmdProcess) Pid() int                          { return p.cmd.Process.Pid }
func (p *cmdProcess) Signal(s syscall.Signal) error     { return p.cmd.Process.Signal(s) }
func (p *cmdProcess) Exited() <-chan struct{}           { return p.exited }
func (p *cmdProcess) Restart(ctx context.Context) error { return ErrNoRestarter }

// Under PIDNamespace the process is pid 1 of its namespace; ForeignOrphan
// puts an orphan it never started under it, which pid 1 reaps once Remove
// killed it.
func TestForeignOrphan_IsAdoptedByThePid1OfTheNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a pid namespace: not root here")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux): %v", tool, err)
		}
	}
	// pid 1: a shell that reaps whatever exits under it.
	argv, err := (&PIDNamespace{}).Wrap([]string{"sh", "-c", "while :; do sleep 0.05; done"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cmdProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	var init int
	waitFor(t, "unshare's only child", 5*time.Second, func() (bool, string) {
		init, err = onlyChild(cmd.Process.Pid)
		return err == nil, fmt.Sprint(err)
	})
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(init) + "/status"); !strings.Contains(string(b), "\nNSpid:\t"+strconv.Itoa(init)+"\t1\n") {
		t.Fatalf("unshare's child %d is not pid 1 of a namespace of its own:\n%s", init, b)
	}
	f := &ForeignOrphan{Process: p, Seconds: 300}
	if err := f.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if f.Kind() != KindForeignOrphan || f.Target() != "ns" || ppidOf(f.Pid) != init || !ProcAlive(f.Pid) {
		t.Fatalf("kind %q target %q orphan %d (parent %d, alive %v): want a live child of pid 1 %d", f.Kind(), f.Target(), f.Pid, ppidOf(f.Pid), ProcAlive(f.Pid), init)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v", err)
	}
	if err := f.Remove(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if procExists(f.Pid) {
		t.Fatalf("orphan %d still there after Remove", f.Pid)
	}
}
