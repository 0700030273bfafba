package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

func stoppedLeading(t *testing.T, path string) record {
	t.Helper()
	for _, r := range readRecords(t, path) {
		if r.Event == "stopped_leading" {
			return r
		}
	}
	t.Fatalf("no stopped_leading in %s: %+v", path, readRecords(t, path))
	return record{}
}

// The reason a supervisor's leadership ended says what happened: its
// command's own exit (--once) is "task exited…", a signal to the
// supervisor is "shutdown".
func TestRun_StoppedLeadingReasonSaysWhy(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	t.Run("--once, the command exits", func(t *testing.T) {
		t.Parallel()
		s, _ := startLoggedSupervisor(t, az.ConnectionString(), "run-reason-once", "once", []string{"--once"}, "true")
		if code := s.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		if r := stoppedLeading(t, s.history); !strings.HasPrefix(r.Reason, "task exited") {
			t.Fatalf("stopped_leading reason %q after the command exited on its own, want \"task exited…\"", r.Reason)
		}
	})
	t.Run("SIGINT", func(t *testing.T) {
		t.Parallel()
		s, _ := startLoggedSupervisor(t, az.ConnectionString(), "run-reason-int", "int", nil, "sleep", "60")
		awaitEvent(t, s.history, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := s.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d after SIGINT, want 0", code)
		}
		if r := stoppedLeading(t, s.history); r.Reason != "shutdown" {
			t.Fatalf("stopped_leading reason %q after SIGINT, want \"shutdown\"", r.Reason)
		}
	})
}

// hiddenProc runs argv as nobody in a mount namespace of its own whose /proc
// is mounted hidepid=invisible (systemd ProtectProc=invisible): nobody sees
// only its own processes. It is the same command line as the chaos
// module's HiddenProc fault (this module cannot import the harness); every
// step execs, so the pid is argv's. joinCgroup, if set, is a cgroup
// directory the process moves into first (a delegated cgroup).
func hiddenProc(t *testing.T, joinCgroup string, argv ...string) *exec.Cmd {
	t.Helper()
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux) to make a private /proc with hidepid: %v", tool, err)
		}
	}
	script := `mount -t proc -o hidepid=invisible proc /proc || exit 97
[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 98
shift
exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", joinCgroup}, argv...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	return cmd
}

// beatPids are the pids that wrote lines "pid unixnano" to path.
func beatPids(path string) []int {
	seen := map[int]bool{}
	var out []int
	b, _ := os.ReadFile(path)
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			if p, err := strconv.Atoi(f[0]); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// lastBeat is the time of the last line "pid unixnano" in path.
func lastBeat(path string) time.Time {
	var last time.Time
	b, _ := os.ReadFile(path)
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil && time.Unix(0, ns).After(last) {
				last = time.Unix(0, ns)
			}
		}
	}
	return last
}

// delegatedCgroup makes a cgroup v2 directory owned by nobody (what systemd
// Delegate=yes gives a service), removed at the end.
func delegatedCgroup(t *testing.T) string {
	t.Helper()
	mount := ""
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, " - cgroup2 "); i >= 0 {
			if f := strings.Fields(l[:i]); len(f) >= 5 {
				mount = f[4]
			}
		}
	}
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted here")
	}
	dir := filepath.Join(mount, fmt.Sprintf("blobleader-test-deleg-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup to delegate: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 200 && os.Remove(dir) != nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.threads"), filepath.Join(dir, "cgroup.subtree_control")} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		t.Skip("no cgroup.kill (Linux < 5.14)")
	}
	return dir
}

// The same /proc, but the supervisor has a delegated cgroup: the group is
// its cgroup, whose cgroup.procs lists the member it cannot see; on SIGTERM
// that member is killed (cgroup.kill) before the lease is released. Judged
// on the helper's own lines: none after the release.
func TestRun_HiddenProcWithADelegatedCgroupTracksTheGroupByItsCgroup(t *testing.T) {
	t.Parallel()
	dir, bin := reachDir(t)
	rooty := becomeRoot(t, dir)
	deleg := delegatedCgroup(t)
	az := azuritetest.StartT(t)
	hist, beats := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "beats")
	cmd := hiddenProc(t, deleg, bin, "run", "--identity", "hidden-cg", "--listen", anyPort, "--history", hist,
		"--container", "run-hidepid-cg", "--log-format", "json", "--connection-string", az.ConnectionString(), "--shutdown-grace", "500ms",
		"--", "sh", "-c", rooty+" "+beats+" & wait")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, pid := range beatPids(beats) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("supervisor output:\n%s", out)
		}
	})
	started := awaitEvent(t, hist, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
	waitFor(t, "the set-user-ID helper's first line (without it the test shows nothing)", 10*time.Second, func() (bool, string) {
		return len(beatPids(beats)) > 0, "no line in " + beats
	})
	if !strings.Contains(out.String(), `"cgroup":"`+deleg+"/") {
		t.Errorf("the command did not start in a cgroup under the delegated %s:\n%s", deleg, out)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	rel := awaitEvent(t, hist, 20*time.Second, "released", func(r record) bool { return r.Event == "released" })
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor did not exit within 10s of its release")
	}
	time.Sleep(200 * time.Millisecond)
	if last := lastBeat(beats); !last.Before(rel.T) {
		t.Fatalf("released at %s while the hidden helper wrote until %s", rel.T.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
	}
	t.Logf("command %d: its hidden member's last line %v before the release", started.PID, rel.T.Sub(lastBeat(beats)).Round(time.Millisecond))
}
