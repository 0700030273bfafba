package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Errors of the package.
var (
	// ErrUnsupported: supervising needs Linux (parent-death signal, child
	// subreaper).
	ErrUnsupported = errors.New("supervise: needs Linux (parent-death signal and child subreaper)")
	// ErrNotFound: the command is not a file, or not in $PATH.
	ErrNotFound = errors.New("supervise: " + notFound)
	// ErrNotExecutable: the command exists but may not be executed.
	ErrNotExecutable = errors.New("supervise: " + notExecutable)
	// ErrSurvived: a member of the group was still there, in a state
	// SIGKILL ends (uninterruptible sleep: D), KillTimeout after SIGKILL;
	// or the group was not proven gone DyingTimeout after that (members
	// the kill had taken that the machine did not run, or the group's own
	// shim or guard). The error names what was left.
	ErrSurvived = errors.New("supervise: process group survived SIGKILL")
	// ErrOutOfReach: a member of the group may not be signalled by the
	// supervisor (EPERM: it changed its user, e.g. sudo or a setuid
	// program), and no cgroup kill reaches it. It may still run: whoever
	// gets this must not act as if the group were gone.
	ErrOutOfReach = errors.New("supervise: " + outOfReach)
	// ErrProcHidden: /proc does not show this process every process
	// (hidepid) and the group has no cgroup: a member it cannot see would be
	// taken for gone, so the group cannot be tracked by its process tree.
	ErrProcHidden = errors.New("supervise: /proc hides processes from this supervisor")
	// ErrProcForeign: /proc is another pid namespace's (ProcForeign): every
	// pid it shows would be taken for another process.
	ErrProcForeign = errors.New("supervise: /proc is another pid namespace's")
)

// The problems a CommandError names, as its sentinel says them.
const (
	notFound      = "command not found"
	notExecutable = "command is not executable"
	outOfReach    = "a member of the group is out of reach (changed user)"
)

// CommandError says why a command cannot be run under supervision, before
// it ever runs (Resolve, CheckReachable): the problem, which Err (ErrNotFound,
// ErrNotExecutable or ErrOutOfReach) says for a program, and what about
// this command causes it.
type CommandError struct {
	Err     error  // ErrNotFound, ErrNotExecutable or ErrOutOfReach
	Problem string // Err in words, e.g. "command not found"
	Detail  string // e.g. `"job" is not in $PATH`
}

func (e *CommandError) Error() string { return e.Err.Error() + ": " + e.Detail }

func (e *CommandError) Unwrap() error { return e.Err }

func commandError(class error, detail string, args ...any) *CommandError {
	problem := map[error]string{ErrNotFound: notFound, ErrNotExecutable: notExecutable, ErrOutOfReach: outOfReach}[class]
	return &CommandError{Err: class, Problem: problem, Detail: fmt.Sprintf(detail, args...)}
}

// KillTimeout bounds how long Stop waits, after SIGKILL, for the last member
// of the group to be reaped on a machine that runs what is due: the budget
// `blobleader run` reserves for it in its safety margin. A member still
// there then in a state SIGKILL should have ended (D: uninterruptible)
// survived it.
const KillTimeout = time.Second

// DyingTimeout is how much longer than KillTimeout Stop waits when what is
// left is only waiting for the CPU: members the kill has taken (runnable,
// SIGKILL pending: they run no more of their own code) and the group's own
// end (its shim's report and exit, its guard's). On a starved machine that
// takes longer than KillTimeout; it is not a survival (a CI run under load:
// a group gone 1.86 s after SIGKILL, its guard late). A bound all the same:
// beyond it Stop gives up with ErrSurvived.
const DyingTimeout = 5 * time.Second

// Resolve finds the command the way a shell would (a name without a slash is
// looked up in $PATH) and checks that it is an executable file. The error
// is a *CommandError (matching ErrNotFound or ErrNotExecutable) naming the
// command.
func Resolve(name string) (string, error) {
	if name == "" {
		return "", commandError(ErrNotFound, "empty command")
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if !strings.Contains(name, "/") {
		if errors.Is(err, exec.ErrNotFound) {
			return "", commandError(ErrNotFound, "%q is not in $PATH", name)
		}
		return "", commandError(ErrNotExecutable, "%q: %v", name, err)
	}
	// A path: say precisely what is wrong with it.
	fi, serr := os.Stat(name)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return "", commandError(ErrNotFound, "%q does not exist", name)
	case serr != nil:
		return "", commandError(ErrNotFound, "%q: %v", name, serr)
	case fi.IsDir():
		return "", commandError(ErrNotExecutable, "%q is a directory", name)
	default:
		return "", commandError(ErrNotExecutable, "%q (mode %s)", name, fi.Mode().Perm())
	}
}

// Spec is the command to start.
type Spec struct {
	Path string   // resolved executable (Resolve)
	Args []string // argv, Args[0] included
	Env  []string // the whole environment, KEY=value
	// Stdout and Stderr receive the command's output; nil means the
	// supervisor's own. Stdin is always /dev/null.
	Stdout, Stderr *os.File
	// Guard, if set, is an executable that acts as a group guard when
	// started as GuardName (RunGuard; blobleader's own binary): it SIGKILLs
	// the command's whole group if the supervisor dies without saying the
	// group ended. Without it, what the command forks survives a SIGKILL of
	// the supervisor.
	Guard string
	// Shim is an executable that acts as the command's parent when started
	// as ShimName (RunShim; blobleader's own binary): it joins the group's
	// cgroup, is the subreaper of the command's lineage, and reports the
	// command's status. Required.
	Shim string
	// KillAt, if not zero, arms the shim and the guard (with Guard set):
	// unless the supervisor extends it (Group.Extend) before then, each
	// SIGKILLs the group itself at KillAt, so the command dies at its
	// leadership's end even when the supervisor is frozen or blocked. It
	// reaches them as an instant of the clock they share (CLOCK_MONOTONIC).
	KillAt time.Time
	// NoCgroup: track the group by its process tree only, even where a
	// cgroup could be made (what happens anyway where none can).
	NoCgroup bool
}

// ExitStatus is how the command (the group leader) ended.
type ExitStatus struct {
	Code   int            // exit code when it exited; -1 when a signal killed it
	Signal syscall.Signal // the signal that killed it; 0 when it exited
}

// Signaled reports whether a signal ended the command.
func (s ExitStatus) Signaled() bool { return s.Signal != 0 }

// ExitCode is the status a shell would report: the code, or 128 + the signal.
func (s ExitStatus) ExitCode() int {
	if s.Signaled() {
		return 128 + int(s.Signal)
	}
	return s.Code
}

// SignalName is the signal's name ("SIGKILL"), empty when it exited.
func (s ExitStatus) SignalName() string {
	if !s.Signaled() {
		return ""
	}
	return signalName(s.Signal)
}

func (s ExitStatus) String() string {
	if s.Signaled() {
		return "killed by " + s.SignalName()
	}
	return fmt.Sprintf("exit code %d", s.Code)
}

func statusOf(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}
