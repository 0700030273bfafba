package supervise

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
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
//     to the supervisor; it exits once it has no child left (wait answers
//     ECHILD), i.e. once nothing of the lineage runs: its exit status 0 is
//     that proof;
//   - holds the leadership's deadline beside the guard (a second holder: a
//     guard killed alone, even just before its supervisor froze, leaves
//     the deadline held), and outlives its supervisor: when the deadline
//     passes without an extension, the supervisor says "kill" (its stop's
//     SIGKILL), or the supervisor dies (its control pipe closes), it kills
//     the lineage (the cgroup, the command's process group, every process
//     below it) until it has no child left, then exits.
//
// It catches (never ignores) the polite and job-control signals and
// SIGPIPE, so that the command, which the kernel starts with every caught
// signal at its default action, inherits none of that. Its process name is
// shimComm, not the binary's: `killall blobleader` stops, or kills, the
// supervisor alone, and the shim holds the deadline meanwhile.
//
// Its arguments: <cgroup dir or "-"> <path> <argv...>; its environment is
// the command's; fd 3 the report pipe, fd 4 the control pipe
// (protocol_linux.go).
const ShimName = "blobleader-supervise-shim"

// shimComm is the shim's process name (comm, at most 15 bytes).
const shimComm = "bl-run-shim"

// IsShim reports whether this process was started as a shim.
func IsShim() bool { return filepath.Base(os.Args[0]) == ShimName }

// The shim's ends of its pipes.
const (
	shimReportFD  = 3
	shimControlFD = 4
)

// RunShim is a shim's whole life; it returns the exit code.
func RunShim() int {
	setComm(shimComm)
	runtime.LockOSThread() // the command's parent-death signal is tied to this thread
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	syscall.CloseOnExec(shimReportFD)
	syscall.CloseOnExec(shimControlFD)
	_ = unix.SetNonblock(shimReportFD, true) // a frozen supervisor never holds it
	if len(os.Args) < 4 {
		reportLine(shimReportFD, report{verb: rptError, text: "shim: want <cgroup|-> <path> <argv...>"})
		return 2
	}
	cg, path, argv := os.Args[1], os.Args[2], os.Args[3:]
	if cg == "-" {
		cg = ""
	} else if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		reportLine(shimReportFD, report{verb: rptError, text: "join cgroup " + cg + ": " + err.Error()})
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		reportLine(shimReportFD, report{verb: rptError, text: "prctl(PR_SET_CHILD_SUBREAPER): " + err.Error()})
		return 1
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EIO
		}
		reportLine(shimReportFD, report{verb: rptExecError, errno: errno})
		return 1
	}
	reportLine(shimReportFD, report{verb: rptPid, pid: pid})
	reported := make(chan struct{}) // closed once a kill's report is written, or never
	go holdLineage(pid, cg, reported)
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil: // ECHILD: nothing of the lineage is left
			select { // a kill's report, bounded
			case <-reported:
			case <-time.After(reportFlush):
			}
			return 0
		case p == pid:
			reportLine(shimReportFD, report{verb: rptStatus, status: ws})
		}
	}
}

// holdLineage holds the deadline from the control pipe and, when the
// lineage must die, kills it until the shim has no child left (the wait
// loop of RunShim then exits, once reported is closed). The report to the
// supervisor, which never blocks, comes before a cgroup.kill that takes
// the shim too; the line on stderr comes after the first round of kills.
func holdLineage(pgid int, cgroup string, reported chan<- struct{}) {
	why := holdDeadline(controls(os.NewFile(shimControlFD, "control")), nil, nil, nil)
	if why == "" {
		return // "done" is the guard's; a shim's lineage ends by itself
	}
	rep := newReporter(os.Stderr)
	if why != whyOrdered { // on its own: the supervisor missed its deadline, or died
		reportLine(shimReportFD, report{verb: rptFired, text: why})
	}
	first := true
	killUntilGone(func() bool {
		if cgroup != "" {
			_ = cgroupKill(cgroup) // the shim is in it too: it ends here
		}
		killTree(pgid, os.Getpid(), nil)
		if first && why != whyOrdered {
			rep.printf("%s: %s: killed group %d", ShimName, why, pgid)
		}
		first = false
		return shimEmpty()
	}, time.Time{}, func() {
		rep.printf("%s: %s: members of group %d still alive %s after SIGKILL (out of reach?); still killing", ShimName, why, pgid, KillTimeout)
	})
	rep.close(reportFlush)
	close(reported)
}

// setComm sets this process's name (what ps, top, killall and pkill show
// and match) to name (at most 15 bytes are kept).
func setComm(name string) {
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
}
