package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The protocol between a supervisor and its two helpers, the guard
// (guard_linux.go) and the shim (shim_linux.go): one line per message, each
// built (String) and parsed (parseControl, parseReport) here and nowhere
// else.
//
// Supervisor to guard (its stdin) and to shim (fd 4), the control messages:
//
//	group <pgid>          the command's process group (guard)
//	root <pid> <start>    the shim, below which the lineage is; start is its
//	                      start time, so a reused pid is never taken for it (guard)
//	cgroup <dir>          the group's cgroup (guard)
//	kill-at <ns>          kill the lineage unless another kill-at comes first:
//	                      an instant of CLOCK_MONOTONIC (guard, shim)
//	kill                  kill the lineage now (shim)
//	done                  the group ended normally: exit without killing (guard)
//
// The end of the input without "done" means the supervisor died.
//
// Shim to supervisor (fd 3), the reports:
//
//	pid <pid>             the command started
//	status <ws>           the command's raw wait status
//	fired <why>           the shim is killing the lineage (it holds no
//	                      deadline any more; it exits once nothing is left)
//	exec-error <errno>    the command could not be executed
//	error <text>          the shim could not set itself up

// Control verbs (supervisor to guard and shim).
const (
	ctlGroup  = "group"
	ctlRoot   = "root"
	ctlCgroup = "cgroup"
	ctlKillAt = "kill-at"
	ctlKill   = "kill"
	ctlDone   = "done"
)

// Report verbs (shim to supervisor).
const (
	rptPid       = "pid"
	rptStatus    = "status"
	rptFired     = "fired"
	rptExecError = "exec-error"
	rptError     = "error"
)

// monoTime is an instant of CLOCK_MONOTONIC in nanoseconds: the clock a
// supervisor and its helpers share (one kernel; Go's monotonic readings
// come from it too). A deadline sent as an instant does not move while its
// line waits in a pipe, as a duration measured from its reading would.
type monoTime int64

// monoNow is now on CLOCK_MONOTONIC.
func monoNow() monoTime {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return monoTime(ts.Nano())
}

// monoOf is the instant t (a reading of this process's clock) on
// CLOCK_MONOTONIC.
func monoOf(t time.Time) monoTime { return monoNow() + monoTime(time.Until(t)) }

// until is how long from now to m (≤ 0: past).
func (m monoTime) until() time.Duration { return time.Duration(m - monoNow()) }

// control is one control message.
type control struct {
	verb  string
	pid   int      // group: the pgid; root: the shim
	start uint64   // root: the shim's start time (clock ticks after boot)
	dir   string   // cgroup
	at    monoTime // kill-at
}

func (c control) String() string {
	switch c.verb {
	case ctlGroup:
		return ctlGroup + " " + strconv.Itoa(c.pid)
	case ctlRoot:
		return fmt.Sprintf("%s %d %d", ctlRoot, c.pid, c.start)
	case ctlCgroup:
		return ctlCgroup + " " + c.dir
	case ctlKillAt:
		return ctlKillAt + " " + strconv.FormatInt(int64(c.at), 10)
	}
	return c.verb
}

var errMessage = errors.New("supervise: malformed message")

// parseControl reads one control line.
func parseControl(line string) (control, error) {
	verb, arg, _ := strings.Cut(line, " ")
	c := control{verb: verb}
	var err error
	switch verb {
	case ctlGroup:
		c.pid, err = strconv.Atoi(arg)
	case ctlRoot:
		p, s, _ := strings.Cut(arg, " ")
		if c.pid, err = strconv.Atoi(p); err == nil {
			c.start, err = strconv.ParseUint(s, 10, 64)
		}
	case ctlCgroup:
		c.dir = arg
		if arg == "" {
			err = errMessage
		}
	case ctlKillAt:
		var ns int64
		ns, err = strconv.ParseInt(arg, 10, 64)
		c.at = monoTime(ns)
	case ctlKill, ctlDone:
	default:
		err = errMessage
	}
	if err != nil {
		return control{}, fmt.Errorf("%w: %q", errMessage, line)
	}
	return c, nil
}

// report is one report of the shim.
type report struct {
	verb   string
	pid    int                // pid
	status syscall.WaitStatus // status
	errno  syscall.Errno      // exec-error
	text   string             // fired, error
}

func (r report) String() string {
	switch r.verb {
	case rptPid:
		return rptPid + " " + strconv.Itoa(r.pid)
	case rptStatus:
		return rptStatus + " " + strconv.FormatUint(uint64(r.status), 10)
	case rptExecError:
		return rptExecError + " " + strconv.Itoa(int(r.errno))
	}
	return r.verb + " " + r.text
}

// parseReport reads one report line.
func parseReport(line string) (report, error) {
	verb, arg, _ := strings.Cut(line, " ")
	r := report{verb: verb}
	var err error
	switch verb {
	case rptPid:
		r.pid, err = strconv.Atoi(arg)
	case rptStatus:
		var ws uint64
		ws, err = strconv.ParseUint(arg, 10, 32)
		r.status = syscall.WaitStatus(ws)
	case rptExecError:
		var n int
		n, err = strconv.Atoi(arg)
		r.errno = syscall.Errno(n)
	case rptFired, rptError:
		r.text = arg
	default:
		err = errMessage
	}
	if err != nil {
		return report{}, fmt.Errorf("%w: %q", errMessage, line)
	}
	return r, nil
}

// controls reads control messages from r until its end, then closes the
// channel. A line that does not parse is skipped: a message that is not
// understood must not stop a helper from holding its deadline.
func controls(r io.Reader) <-chan control {
	out := make(chan control)
	go func() {
		defer close(out)
		for sc := bufio.NewScanner(r); sc.Scan(); {
			if c, err := parseControl(sc.Text()); err == nil {
				out <- c
			}
		}
	}()
	return out
}

// whyOrdered is holdDeadline's reason when the supervisor said kill (its
// own stop): the helper helps, but did not fire on its own.
const whyOrdered = "the supervisor stops the group"

// holdDeadline is the loop a guard and a shim share: it applies the control
// messages (apply gets every one but kill-at, kill and done) and holds the
// kill-at deadline, and returns why the lineage must be killed now — the
// deadline passed without another, the supervisor said kill, or it died
// (the input ended without done) — or "" after done. tick, if not nil,
// calls onTick.
func holdDeadline(in <-chan control, apply func(control), tick <-chan time.Time, onTick func()) string {
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	defer deadline.Stop()
	for {
		select {
		case c, ok := <-in:
			switch {
			case !ok:
				return "the supervisor died"
			case c.verb == ctlDone:
				return ""
			case c.verb == ctlKill:
				return whyOrdered
			case c.verb == ctlKillAt:
				deadline.Reset(max(c.at.until(), 0))
			case apply != nil:
				apply(c)
			}
		case <-deadline.C:
			return "no extension of the leadership's deadline came in time (the supervisor is frozen, blocked or stopped)"
		case <-tick:
			onTick()
		}
	}
}

// controlPipe is the supervisor's end of a helper's control pipe.
type controlPipe struct {
	mu sync.Mutex
	w  *os.File // the pipe's only write end
}

// sendTimeout bounds a control write: a helper that does not read (frozen
// with the host) must not hold the supervisor. A message that cannot be
// written in time is lost, which errs towards the helper killing the
// lineage at the last deadline it has.
const sendTimeout = 100 * time.Millisecond

// send writes the messages, in order, within sendTimeout each.
func (p *controlPipe) send(cs ...control) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = p.w.SetWriteDeadline(time.Now().Add(sendTimeout))
		_, _ = fmt.Fprintln(p.w, c)
	}
}

// close closes the write end: the helper reads the end of its input.
func (p *controlPipe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.w.Close()
}

// reportLine writes one report to fd without blocking (a frozen supervisor
// must never hold the shim; a report that does not fit is lost).
func reportLine(fd int, r report) {
	_, _ = unix.Write(fd, []byte(r.String()+"\n"))
}
