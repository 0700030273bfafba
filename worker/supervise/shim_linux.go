package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The shim is the command's parent: a process of our own binary (argv[0]
// ShimName) that the supervisor starts and that starts the command. It
//
//   - moves itself into the group's cgroup first (a write of its pid to
//     cgroup.procs), so the command is forked inside it without clone3
//     (CLONE_INTO_CGROUP), which container seccomp profiles refuse;
//   - is a child subreaper: whatever the command's lineage orphans comes
//     back to it, and only that. Orphans not born from the command (adopted
//     by a supervisor that is pid 1, or by any subreaper) go to the
//     supervisor and are never members of the group;
//   - reaps the whole lineage and reports the command's pid and exit status
//     to the supervisor; it exits once it has no child left, i.e. once
//     nothing of the lineage runs;
//   - holds the leadership's deadline beside the guard (a second holder: a
//     guard killed alone, even just before its supervisor froze, leaves
//     the deadline held), and outlives its supervisor: when the deadline
//     passes without an extension, or the supervisor dies (its control pipe
//     closes), it SIGKILLs the whole lineage (the cgroup, the command's
//     process group, every process below it), reaps it and exits.
//
// It catches (never ignores) the polite and job-control signals and
// SIGPIPE, so that the command, which the kernel starts with every caught
// signal at its default action, inherits none of that.
//
// Its arguments: <cgroup dir or "-"> <path> <argv...>; its environment is
// the command's; fd 3 is the report pipe (lines "pid N", "status W" with
// the raw wait status, "fired WHY", or "error ERRNO text"); fd 4 the
// control pipe (lines "deadline NS", as the guard's).
const ShimName = "blobleader-supervise-shim"

// IsShim reports whether this process was started as a shim.
func IsShim() bool { return filepath.Base(os.Args[0]) == ShimName }

// The shim's ends of its pipes.
const (
	shimReportFD  = 3
	shimControlFD = 4
)

// RunShim is a shim's whole life; it returns the exit code.
func RunShim() int {
	runtime.LockOSThread() // the command's parent-death signal is tied to this thread
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	syscall.CloseOnExec(shimReportFD)
	syscall.CloseOnExec(shimControlFD)
	_ = unix.SetNonblock(shimReportFD, true) // a frozen supervisor never holds it
	report := func(format string, args ...any) {
		_, _ = unix.Write(shimReportFD, []byte(fmt.Sprintf(format, args...)+"\n"))
	}
	if len(os.Args) < 4 {
		report("error %d shim: want <cgroup|-> <path> <argv...>", int(syscall.EINVAL))
		return 2
	}
	cg, path, argv := os.Args[1], os.Args[2], os.Args[3:]
	if cg != "-" {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			report("error %d join cgroup %s: %v", errnoOf(err), cg, err)
			return 1
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report("error %d prctl(PR_SET_CHILD_SUBREAPER): %v", errnoOf(err), err)
		return 1
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		report("error %d %v", errnoOf(err), err)
		return 1
	}
	report("pid %d", pid)
	l := &lineage{pgid: pid, cgroup: strings.TrimPrefix(cg, "-")}
	go l.hold(os.NewFile(shimControlFD, "control"), report)
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil: // ECHILD: nothing of the lineage is left
			return 0
		case p == pid:
			report("status %d", uint32(ws))
		}
	}
}

func errnoOf(err error) int {
	var e syscall.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return int(syscall.EIO)
}

// lineage is what a shim kills when its deadline passes or its supervisor
// dies.
type lineage struct {
	pgid   int
	cgroup string // "" without one
}

// hold reads the supervisor's deadlines and kills the lineage when one
// passes without the next, or when the control pipe closes (the supervisor
// is gone). It kills first and reports after.
func (l *lineage) hold(ctl *os.File, report func(string, ...any)) {
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(ctl); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				l.kill()
				report("fired the supervisor died")
				return
			}
			if v, ok := strings.CutPrefix(line, guardDeadline); ok {
				if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
					deadline.Reset(time.Duration(ns))
				}
			}
		case <-deadline.C:
			l.kill()
			report("fired no extension of the leadership's deadline came in time")
			return
		}
	}
}

// kill SIGKILLs the lineage until nothing of it is alive, or two seconds
// passed; the shim's wait loop reaps it.
func (l *lineage) kill() {
	for stop := time.Now().Add(2 * time.Second); time.Now().Before(stop); time.Sleep(5 * time.Millisecond) {
		if l.cgroup != "" {
			_ = cgroupKill(l.cgroup)
		}
		_ = syscall.Kill(-l.pgid, syscall.SIGKILL)
		left := 0
		for _, p := range readProcesses().descendants(os.Getpid(), nil) {
			if !p.dead() {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
				left++
			}
		}
		if left == 0 {
			return
		}
	}
}
