package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the processes the tests supervise: with
// SUPERVISE_HELPER set, TestMain runs one of these roles instead of the tests.
const helperEnv = "SUPERVISE_HELPER"

// tracerRefused is the "tracer" helper's exit status where ptrace is
// refused.
const tracerRefused = 3

// helperSpec runs this test binary in role with extra environment.
func helperSpec(role string, env ...string) Spec {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return Spec{Path: exe, Args: []string{exe, "-test.run=^$"}, Env: append([]string{helperEnv + "=" + role}, env...), Shim: exe}
}

// runHelper runs a helper role and exits; it never returns.
func runHelper(role string) {
	switch role {
	case "env":
		// Print what the command sees: its environment, its group and stdin.
		fmt.Printf("TERM_VAR=%s\n", os.Getenv("BLOBLEADER_TERM"))
		fmt.Printf("PGID=%d PID=%d\n", syscall.Getpgrp(), os.Getpid())
		b := make([]byte, 1)
		n, err := os.Stdin.Read(b)
		fmt.Printf("STDIN=%d %v\n", n, err)
		os.Exit(0)
	case "exit":
		code, _ := strconv.Atoi(os.Getenv("HELPER_CODE"))
		os.Exit(code)
	case "ignore-term":
		// Ignores SIGTERM (and SIGINT, SIGHUP) and lives until killed;
		// with HELPER_TERMFILE it notes each SIGTERM there instead.
		signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
		if f := os.Getenv("HELPER_TERMFILE"); f != "" {
			terms := make(chan os.Signal, 8)
			signal.Notify(terms, syscall.SIGTERM)
			go func() {
				for range terms {
					if out, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
						_, _ = out.WriteString("SIGTERM\n")
						_ = out.Close()
					}
				}
			}()
		} else {
			signal.Ignore(syscall.SIGTERM)
		}
		announce()
		sleepForever()
	case "forker":
		// Starts a grandchild in its own (inherited) group that ignores
		// signals, announces both pids, then exits or waits as told.
		exe, _ := os.Executable()
		p, err := os.StartProcess(exe, []string{exe, "-test.run=^$"}, &os.ProcAttr{
			Env:   []string{helperEnv + "=ignore-term", "HELPER_PIDFILE=" + os.Getenv("HELPER_PIDFILE")},
			Files: []*os.File{nil, os.Stdout, os.Stderr},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = p.Release()
		announce()
		if os.Getenv("HELPER_WAIT") != "" {
			signal.Ignore(syscall.SIGTERM)
			sleepForever()
		}
		// Exit once the grandchild has announced itself.
		waitLines(os.Getenv("HELPER_PIDFILE"), 2, 10*time.Second)
		os.Exit(0)
	case "supervisor-of-forker":
		// A supervisor of its own whose command leaves a grandchild that
		// ignores signals (for the guard test).
		spec := helperSpec("forker", "HELPER_PIDFILE="+os.Getenv("HELPER_PIDFILE"), "HELPER_WAIT=1")
		if os.Getenv("HELPER_GUARD") != "" {
			spec.Guard = spec.Path // this test binary: TestMain runs RunGuard as GuardName
		}
		g, err := Start(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		<-g.Done()
		os.Exit(0)
	case "escaper":
		// Like a cron daemon: starts two long jobs that leave its process
		// group, one in a new session (setsid) and one in a new process
		// group, both ignoring polite signals; announces all three pids.
		exe, _ := os.Executable()
		for _, attr := range []*syscall.SysProcAttr{{Setsid: true}, {Setpgid: true}} {
			p, err := os.StartProcess(exe, []string{exe, "-test.run=^$"}, &os.ProcAttr{
				Env:   []string{helperEnv + "=ignore-term", "HELPER_PIDFILE=" + os.Getenv("HELPER_PIDFILE")},
				Files: []*os.File{nil, os.Stdout, os.Stderr}, Sys: attr,
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			_ = p.Release()
		}
		announce()
		sleepForever()
	case "become-root":
		// A set-user-ID root copy of this binary: makes root its real user
		// too (as sudo does), so its unprivileged parent may not signal it.
		if err := syscall.Setuid(0); err != nil {
			fmt.Fprintln(os.Stderr, "become-root:", err)
			os.Exit(1)
		}
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		announce()
		sleepForever()
	case "reach-supervisor":
		// An unprivileged supervisor whose command becomes root: reports
		// CheckReach and how Stop ends, then exits.
		exe, _ := os.Executable()
		spec := Spec{Path: os.Getenv("HELPER_SETUID"), Args: []string{os.Getenv("HELPER_SETUID"), "-test.run=^$"},
			Env: []string{helperEnv + "=become-root", "HELPER_PIDFILE=" + os.Getenv("HELPER_PIDFILE")}, Shim: exe}
		fmt.Printf("CHECKREACHABLE=%v\n", errors.Is(CheckReachable(spec.Path), ErrOutOfReach))
		g, err := Start(spec)
		if err != nil {
			fmt.Println("START", err)
			os.Exit(1)
		}
		waitLines(os.Getenv("HELPER_PIDFILE"), 1, 10*time.Second)
		time.Sleep(50 * time.Millisecond)
		fmt.Printf("CGROUP=%q\n", g.Cgroup())
		fmt.Printf("REACH=%v\n", g.CheckReach())
		began := time.Now()
		err = g.Stop(syscall.SIGTERM, 200*time.Millisecond)
		fmt.Printf("STOP=%v\nOUTOFREACH=%v\nTOOK=%d\n", err, errors.Is(err, ErrOutOfReach), time.Since(began).Milliseconds())
		os.Exit(0)
	case "tracer":
		// A debugger's hold: seize every thread of HELPER_TRACEE with
		// ptrace (and the threads they start), stop each
		// (PTRACE_INTERRUPT), create HELPER_TRACED, and never let one run
		// again, whatever signals come, until the process dies. Exits
		// tracerRefused where ptrace is refused.
		runtime.LockOSThread() // every ptrace request from the one tracer thread
		pid, _ := strconv.Atoi(os.Getenv("HELPER_TRACEE"))
		seized := map[int]bool{}
		for grew := true; grew; {
			grew = false
			entries, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
			for _, e := range entries {
				tid, _ := strconv.Atoi(e.Name())
				if seized[tid] {
					continue
				}
				if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, unix.PTRACE_O_TRACECLONE, 0, 0); errno != 0 {
					fmt.Fprintf(os.Stderr, "PTRACE_SEIZE %d: %v\n", tid, errno)
					os.Exit(tracerRefused)
				}
				_ = unix.PtraceInterrupt(tid)
				seized[tid], grew = true, true
			}
		}
		if err := os.WriteFile(os.Getenv("HELPER_TRACED"), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
			if err != nil || (wpid == pid && (ws.Exited() || ws.Signaled())) {
				os.Exit(0) // it died: its parent reaps it
			}
			// A stop reported (the interrupt, a signal, a new thread):
			// left stopped.
		}
	case "deadline-supervisor":
		// A supervisor of its own whose guard holds a deadline of
		// HELPER_DEADLINE, extended every 100 ms for HELPER_EXTEND, then
		// never again; its command ignores SIGTERM. The deadline is armed
		// only once the command runs (its pid is in HELPER_PIDFILE), and
		// HELPER_ARMED is created then: a start slower than the deadline
		// (a busy machine; the fault HELPER_SLOW_START, a sleep between
		// choosing the start's deadline and starting) cannot spend it
		// before the first extension.
		pidfile := os.Getenv("HELPER_PIDFILE")
		spec := helperSpec("ignore-term", "HELPER_PIDFILE="+pidfile)
		spec.Guard = spec.Path
		deadline, _ := time.ParseDuration(os.Getenv("HELPER_DEADLINE"))
		spec.KillAt = time.Now().Add(time.Minute) // held while starting
		if slow, _ := time.ParseDuration(os.Getenv("HELPER_SLOW_START")); slow > 0 {
			time.Sleep(slow)
		}
		g, err := Start(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if len(waitLines(pidfile, 1, time.Minute)) == 0 {
			fmt.Fprintln(os.Stderr, "deadline-supervisor: the command never wrote its pid")
			os.Exit(1)
		}
		g.Extend(time.Now().Add(deadline))
		if err := os.WriteFile(os.Getenv("HELPER_ARMED"), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		extend, _ := time.ParseDuration(os.Getenv("HELPER_EXTEND"))
	extending:
		for end := time.Now().Add(extend); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			select {
			case <-g.Done():
				break extending
			default:
			}
			g.Extend(time.Now().Add(deadline))
		}
		<-g.Done()
		// Who killed: the shim's report, and how the guard (the last one)
		// ended.
		guardEnd := "none"
		if cur := g.currentGuard(); cur != nil && cur.cmd.ProcessState != nil {
			guardEnd = cur.status()
		}
		fmt.Printf("GUARD=%v SHIM_FIRED=%v GUARD_ENDED=%q\n", g.KilledByGuard(), g.fired.Load(), guardEnd)
		os.Exit(0)
	case "walker-subreaper":
		// A child subreaper (as a supervisor is) that starts a fork-walker
		// below it, whose every hop becomes its child, announces itself
		// and waits; the test freezes it, so it reaps nothing.
		if err := EnableSubreaper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		startWalker()
		announce()
		sleepForever()
	case "walker-host":
		// A command that starts a fork-walker (fork, setsid, exit, a hop
		// every few ms; every 16th hop appends its pid to HELPER_WALKS),
		// announces itself and waits.
		startWalker()
		announce()
		sleepForever()
	case "walker-supervisor":
		// A supervisor of its own in tree mode whose command starts a
		// walker; once the walker hopped, it announces itself, then stops
		// the group (HELPER_STOP=term, printing STOP=<err>, and for a stop
		// that gave up, ErrSurvived, when it began and how long until the
		// group was reaped after all: judgeStop) or waits to be killed.
		spec := helperSpec("walker-host", "HELPER_PIDFILE="+os.Getenv("HELPER_PIDFILE")+".cmd", "HELPER_WALKS="+os.Getenv("HELPER_WALKS"),
			"PATH="+os.Getenv("PATH"))
		spec.NoCgroup = true
		g, err := Start(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		waitLines(os.Getenv("HELPER_WALKS"), 2, 10*time.Second)
		announce()
		if os.Getenv("HELPER_STOP") == "term" {
			began := time.Now()
			err := g.Stop(syscall.SIGTERM, walkerGrace)
			fmt.Printf("STOP=%v\n", err)
			if errors.Is(err, ErrSurvived) {
				select {
				case <-g.Done():
					fmt.Printf("BEGAN=%d\nREAPED_AFTER=%d\n", began.UnixNano(), time.Since(began))
				case <-time.After(30 * time.Second):
				}
			}
			os.Exit(0)
		}
		sleepForever()
	case "nester":
		// A command that nests a cgroup in its own, leaves a job there (a
		// new session, ignoring polite signals), announces the job and exits.
		own, err := ownCgroup()
		mount, merr := cgroup2Mount()
		if err != nil || merr != nil {
			fmt.Fprintln(os.Stderr, err, merr)
			os.Exit(1)
		}
		inner := filepath.Join(mount, own, "inner")
		exe, _ := os.Executable()
		job := exec.Command(exe, "-test.run=^$")
		job.Env = []string{helperEnv + "=ignore-term", "HELPER_PIDFILE=" + os.Getenv("HELPER_PIDFILE")}
		job.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := os.Mkdir(inner, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := job.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(inner, "cgroup.procs"), []byte(strconv.Itoa(job.Process.Pid)), 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		waitLines(os.Getenv("HELPER_PIDFILE"), 1, 10*time.Second)
		os.Exit(0)
	case "supervisor":
		// A supervisor of its own (for the parent-death test): starts an
		// ignore-term child and waits for ever.
		g, err := Start(helperSpec("ignore-term", "HELPER_PIDFILE="+os.Getenv("HELPER_PIDFILE")))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		<-g.Done()
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	os.Exit(99)
}

// walkerScript is one hop of a fork-walker (POSIX sh, $WALK holds the
// script): count the hop, note every 16th pid in $HELPER_WALKS, fork a new
// session (util-linux setsid -f) whose child is the next hop, exit.
const walkerScript = `n=$(( ${1:-0} + 1 ))
[ $(( n % 16 )) -ne 0 ] || echo $$ >> "$HELPER_WALKS"
exec setsid -f sh -c "$WALK" walker "$n"`

// startWalker starts a fork-walker (walkerScript) as this process's child,
// not waited for; it exits 1 if it cannot.
func startWalker() {
	c := exec.Command("sh", "-c", walkerScript, "walker", "0")
	c.Env = append(os.Environ(), "WALK="+walkerScript)
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// announce appends this process's pid to $HELPER_PIDFILE.
func announce() {
	f, err := os.OpenFile(os.Getenv("HELPER_PIDFILE"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
}

// sleepForever blocks without tripping the runtime's deadlock detector.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
