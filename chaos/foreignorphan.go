package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// ForeignOrphan puts an orphan its target never started into the pid
// namespace whose pid 1 the target is (a PIDNamespace launch): `docker exec
// c sh -c 'job &'` does that, the job being re-parented to the container's
// pid 1 when the shell exits. A supervisor that takes it for a member of
// its command's group kills it with the command, or waits for it. The
// orphan runs `sleep Seconds`; Remove SIGKILLs it and waits until it is
// reaped (pid 1's duty).
type ForeignOrphan struct {
	Process Process `json:"-"`       // the launcher (unshare) of the target; PIDProcess
	Seconds int     `json:"seconds"` // how long the orphan sleeps; default 600
	// Pid is the orphan's pid in our namespace, once injected.
	Pid int `json:"pid"`

	place
	target string
}

var (
	_ Fault         = (*ForeignOrphan)(nil)
	_ ProcessTarget = (*ForeignOrphan)(nil)
)

func (f *ForeignOrphan) SetProcess(p Process) { f.Process = p }

func (f *ForeignOrphan) Kind() Kind { return KindForeignOrphan }

// Target is the name of the process whose namespace gets the orphan.
func (f *ForeignOrphan) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target == "" && f.Process != nil {
		return f.Process.Name()
	}
	return f.target
}

// Inject enters the namespace (nsenter), starts the orphan from a shell
// that exits at once, and returns once the orphan is the child of the
// namespace's pid 1.
func (f *ForeignOrphan) Inject(ctx context.Context) error {
	return f.putIn("", func() error { return f.start(ctx) })
}

// start leaves the orphan in the target's pid namespace and finds its pid.
func (f *ForeignOrphan) start(ctx context.Context) error {
	if err := running(f.Process); err != nil {
		return err
	}
	pp, ok := f.Process.(PIDProcess)
	if !ok {
		return fmt.Errorf("%w: %s has no pid", ErrNoTarget, f.Process.Name())
	}
	init, err := onlyChild(pp.Pid())
	if err != nil {
		return err
	}
	secs := f.Seconds
	if secs <= 0 {
		secs = 600
	}
	marker := strconv.Itoa(secs)
	sh := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(init), "--pid", "--mount", "--", "sh", "-c", "sleep "+marker+" >/dev/null 2>&1 </dev/null & exit 0")
	if out, err := sh.CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: nsenter into %d: %w: %s", init, err, out)
	}
	for {
		if pid, err := ChildNamed(init, "sleep"); err == nil {
			f.Pid, f.target = pid, f.Process.Name()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: no orphan under %d: %w", init, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Remove SIGKILLs the orphan and returns once it is reaped.
func (f *ForeignOrphan) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		_ = exec.Command("kill", "-KILL", strconv.Itoa(f.Pid)).Run()
		for procExists(f.Pid) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: orphan %d not reaped: %w", ErrStillAlive, f.Pid, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	})
}

// onlyChild is the one live child of parent (the pid 1 unshare forked).
func onlyChild(parent int) (int, error) {
	entries, err := readProcDir()
	if err != nil {
		return 0, err
	}
	for _, pid := range entries {
		if ProcAlive(pid) && ppidOf(pid) == parent {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%w: no child of %d", ErrNotRunning, parent)
}
