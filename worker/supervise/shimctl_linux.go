package supervise

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// The supervisor's side of the shim: its reports (protocol_linux.go).

// shimStartTimeout bounds how long Start waits for the shim to name the
// command: a Go binary's start and one fork and exec.
const shimStartTimeout = 10 * time.Second

// reportReader reads the shim's reports.
type reportReader struct {
	f *os.File
	r *bufio.Reader
}

func newReportReader(f *os.File) *reportReader { return &reportReader{f: f, r: bufio.NewReader(f)} }

// next is the next report; an error at EOF (the shim is gone) or at the
// deadline (zero: none). A line that does not parse is skipped.
func (l *reportReader) next(deadline time.Time) (report, error) {
	_ = l.f.SetReadDeadline(deadline)
	for {
		s, err := l.r.ReadString('\n')
		if err != nil {
			return report{}, err
		}
		if r, err := parseReport(strings.TrimSuffix(s, "\n")); err == nil {
			return r, nil
		}
	}
}

// startErr is the errno of a command the shim could not start.
type startErr struct{ errno syscall.Errno }

func (e startErr) Error() string { return e.errno.Error() }

// awaitCommand waits for the shim's first report: the command's pid, or why
// it did not start (a startErr for the exec's own errors).
func (g *Group) awaitCommand() (int, error) {
	r, err := g.reports.next(time.Now().Add(shimStartTimeout))
	if err != nil {
		_ = syscall.Kill(g.shim, syscall.SIGKILL)
		return 0, fmt.Errorf("supervise: the shim did not name the command: %w", err)
	}
	switch r.verb {
	case rptPid:
		if r.pid > 0 {
			return r.pid, nil
		}
	case rptExecError:
		return 0, startErr{r.errno}
	case rptError:
		return 0, fmt.Errorf("supervise: shim: %s", r.text)
	}
	return 0, fmt.Errorf("supervise: the shim said %q", r)
}

// awaitStatus waits for the command's exit status. A shim that ends
// without one died first (SIGKILL: by cgroup.kill, a guard, or someone),
// and the command with it (its parent-death signal): SIGKILL, and the shim
// is lost.
func (g *Group) awaitStatus() ExitStatus {
	for {
		r, err := g.reports.next(time.Time{})
		if err != nil {
			g.shimDied.Store(true)
			return ExitStatus{Code: -1, Signal: syscall.SIGKILL}
		}
		switch r.verb {
		case rptFired:
			g.fired.Store(true)
		case rptStatus:
			return statusOf(r.status)
		}
	}
}
