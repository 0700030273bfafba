package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// NameStop is `killall -STOP NAME` aimed at one host: it SIGSTOPs every
// process of the target's tree (the process and its descendants) whose
// process name (comm, what killall and pkill match) is Name, and leaves
// the rest running, as an operator freezing "the blobleader processes" of
// one machine would. Aimed at one process tree rather than at the whole
// machine, so a test never stops anything it did not start. Remove
// continues them with SIGCONT.
type NameStop struct {
	Process Process `json:"-"`    // the top of the tree (must implement PIDProcess)
	Name    string  `json:"name"` // the process name (comm) to stop, e.g. "blobleader"
	// Stopped are the pids Inject stopped.
	Stopped []int `json:"stopped"`

	state signalled
}

var (
	_ Fault         = (*NameStop)(nil)
	_ ProcessTarget = (*NameStop)(nil)
)

func (f *NameStop) SetProcess(p Process) { f.Process = p }

func (f *NameStop) Kind() Kind { return KindNameStop }

// Target is the name of the process whose tree is stopped.
func (f *NameStop) Target() string { return f.state.name(f.Process) }

// Inject stops every process of the tree named Name and returns once each
// is stopped.
func (f *NameStop) Inject(ctx context.Context) error {
	if f.Name == "" {
		return fmt.Errorf("%w: NameStop.Name is empty", ErrInvalid)
	}
	return f.state.do(ctx, f.Process, func() (bool, error) {
		pp, ok := f.Process.(PIDProcess)
		if !ok {
			return false, fmt.Errorf("%w: %s has no pid to find its tree by", ErrNoTarget, f.Process.Name())
		}
		f.Stopped = f.Stopped[:0]
		for _, pid := range append([]int{pp.Pid()}, descendantsOf(pp.Pid())...) {
			if commOf(pid) == f.Name && syscall.Kill(pid, syscall.SIGSTOP) == nil {
				f.Stopped = append(f.Stopped, pid)
			}
		}
		if len(f.Stopped) == 0 {
			return false, fmt.Errorf("%w: no process named %q in the tree of %s", ErrNotRunning, f.Name, f.Process.Name())
		}
		for _, pid := range f.Stopped {
			if err := awaitPidState(ctx, pid, true); err != nil {
				return true, err
			}
		}
		return true, nil
	})
}

// Remove continues every process Inject stopped.
func (f *NameStop) Remove(ctx context.Context) error {
	return f.state.undo(func() error {
		for _, pid := range f.Stopped {
			if syscall.Kill(pid, syscall.SIGCONT) == nil {
				if err := awaitPidState(ctx, pid, false); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// commOf is pid's process name (/proc/<pid>/comm), "" if unreadable.
func commOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// descendantsOf lists every process below pid, read from /proc.
func descendantsOf(pid int) []int {
	var out []int
	for queue := childrenOf(pid); len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, childrenOf(queue[0])...)
	}
	return out
}
