package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// RunGuard is a guard's whole life; it returns the exit code. It reads the
// group ID (one line), then waits: "done" means the group ended normally;
// the end of input without it means the supervisor died, and the group gets
// SIGKILL. It ignores the polite signals (a ^C or a service manager's
// SIGTERM to everyone must not end it before the supervisor has stopped the
// group), and lives in a process group of its own.
func RunGuard() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	sc := bufio.NewScanner(os.Stdin)
	pgid := 0
	if sc.Scan() {
		pgid, _ = strconv.Atoi(strings.TrimSpace(sc.Text()))
	}
	for sc.Scan() {
		if sc.Text() == guardDone {
			return 0
		}
	}
	// The supervisor is gone (or never named a group: nothing to do).
	if pgid > 1 {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			fmt.Fprintf(os.Stderr, "%s: kill(-%d, SIGKILL): %v\n", GuardName, pgid, err)
			return 1
		}
	}
	return 0
}

// guard is the supervisor's end of a running guard.
type guard struct {
	cmd *exec.Cmd
	w   *os.File // the pipe's only write end
}

// startGuard starts path as a guard, before the command exists.
func startGuard(path string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: guard pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: path, Args: []string{GuardName}, Stdin: r, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("supervise: start guard %q: %w", path, err)
	}
	return &guard{cmd: cmd, w: w}, nil
}

// watch tells the guard which group to kill if we die.
func (g *guard) watch(pgid int) {
	_, _ = fmt.Fprintf(g.w, "%d\n", pgid)
}

// release tells the guard the group ended normally and reaps it.
func (g *guard) release() {
	_, _ = fmt.Fprintln(g.w, guardDone)
	g.w.Close()
	_ = g.cmd.Wait()
}
