package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/blobleader/blobleader/worker/supervise"
)

// GuardKill SIGKILLs the group guard of a `blobleader run` supervisor alone
// (the child of the supervisor started as supervise.GuardName), as an
// OOM kill of the small process, an operator's `kill -9` of the wrong pid or
// a process manager's cleanup would. The supervisor runs on: whether it
// notices, and whether its leadership is ever held unguarded for long, is
// what the fault shows. A dead process cannot be given back, so Remove only
// forgets the fault.
type GuardKill struct {
	Process Process `json:"-"` // the supervisor (must implement PIDProcess)
	// Guard is the pid of the guard Inject killed (0 before).
	Guard int `json:"guard_pid"`

	state signalled
}

var (
	_ Fault         = (*GuardKill)(nil)
	_ ProcessTarget = (*GuardKill)(nil)
)

func (f *GuardKill) SetProcess(p Process) { f.Process = p }

func (f *GuardKill) Kind() Kind { return KindGuardKill }

// Target is the name of the supervisor whose guard is killed.
func (f *GuardKill) Target() string { return f.state.name(f.Process) }

// Inject finds the supervisor's guard, SIGKILLs it and returns once it runs
// nothing (dead, or a zombie its supervisor has not reaped yet).
func (f *GuardKill) Inject(ctx context.Context) error {
	return f.state.signalHelper(ctx, f.Process, helperSignal{
		name: supervise.GuardName, what: "kill guard", sig: syscall.SIGKILL, await: awaitDeath,
	}, &f.Guard)
}

// Remove forgets the fault (the killed guard stays dead).
func (f *GuardKill) Remove(ctx context.Context) error {
	_ = f.state.undo(nil)
	return ctx.Err()
}

// ChildNamed is the pid of a live child of parent whose argv[0] has the base
// name name, read from /proc.
func ChildNamed(parent int, name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("chaos: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !ProcAlive(pid) || ppidOf(pid) != parent {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); filepath.Base(string(argv0)) == name {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%w: no live child %q of pid %d", ErrNotRunning, name, parent)
}

// ppidOf is the parent pid in /proc/<pid>/stat (0 if unreadable).
func ppidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// readProcDir lists the pids in /proc.
func readProcDir() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// procExists reports whether pid has a /proc entry (a zombie included).
func procExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
