package supervise

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The supervisor's side of the shim: its reports.

// shimStartTimeout bounds how long Start waits for the shim to name the
// command: a Go binary's start and one fork and exec.
const shimStartTimeout = 10 * time.Second

// lineReader reads the shim's report lines.
type lineReader struct {
	f *os.File
	r *bufio.Reader
}

func newLineReader(f *os.File) *lineReader { return &lineReader{f: f, r: bufio.NewReader(f)} }

// next is the next line; an error at EOF (the shim is gone) or at the
// deadline (zero: none).
func (l *lineReader) next(deadline time.Time) (string, error) {
	_ = l.f.SetReadDeadline(deadline)
	s, err := l.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// startErr is the errno of a command the shim could not start.
type startErr struct{ errno syscall.Errno }

func (e startErr) Error() string { return e.errno.Error() }

// awaitCommand waits for the shim's first report: the command's pid, or why
// it did not start (a startErr for the exec's own errors).
func (g *Group) awaitCommand() (int, error) {
	line, err := g.reports.next(time.Now().Add(shimStartTimeout))
	if err != nil {
		_ = syscall.Kill(g.shim, syscall.SIGKILL)
		return 0, fmt.Errorf("supervise: the shim did not name the command: %w", err)
	}
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "pid":
		if pid, err := strconv.Atoi(rest); err == nil && pid > 0 {
			return pid, nil
		}
	case "error":
		num, text, _ := strings.Cut(rest, " ")
		if n, err := strconv.Atoi(num); err == nil && !strings.HasPrefix(text, "join cgroup") && !strings.HasPrefix(text, "prctl") && !strings.HasPrefix(text, "shim:") {
			return 0, startErr{syscall.Errno(n)}
		}
		return 0, fmt.Errorf("supervise: shim: %s", text)
	}
	return 0, fmt.Errorf("supervise: the shim said %q", line)
}

// awaitStatus waits for the command's exit status. A shim that ends
// without one died first (SIGKILL: by cgroup.kill, a guard, or someone),
// and the command with it (its parent-death signal): SIGKILL.
func (g *Group) awaitStatus() ExitStatus {
	for {
		line, err := g.reports.next(time.Time{})
		if err != nil {
			return ExitStatus{Code: -1, Signal: syscall.SIGKILL}
		}
		if strings.HasPrefix(line, "fired ") {
			g.fired = true
		}
		if v, ok := strings.CutPrefix(line, "status "); ok {
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				return statusOf(syscall.WaitStatus(n))
			}
		}
	}
}
