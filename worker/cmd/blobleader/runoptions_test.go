package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A set-user-ID command owned by another user, under a supervisor that is
// not root and has no cgroup kill, could be started but never stopped: it
// is refused before anything runs, exit 2, naming the rule.
func TestRun_RefusesASetUIDCommandItCouldNotStop(t *testing.T) {
	t.Parallel()
	dir, bin := reachDir(t)
	rooty := becomeRoot(t, dir)
	cmd := exec.Command(bin, "run", "--connection-string="+goodConn, "--", rooty, filepath.Join(dir, "beats"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		t.Fatal("the supervisor did not exit within 20s: it contended instead of refusing the command")
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(string(out), "set-user-ID") || !strings.Contains(string(out), "sudo blobleader run -- job") {
		t.Fatalf("exit %d, want 2 naming the set-user-ID rule; output:\n%s", code, out)
	}
}

// Under a /proc that hides other users' processes, an unprivileged
// supervisor without a cgroup of its own cannot see a process of its
// command that became root (a set-user-ID helper it runs later), and would
// take it for gone: release while it runs. It must refuse to start, exit 2,
// naming hidepid.
func TestRun_HiddenProcWithoutACgroupRefusesToStart(t *testing.T) {
	t.Parallel()
	dir, bin := reachDir(t)
	rooty := becomeRoot(t, dir)
	az := azuritetest.StartT(t)
	hist, beats := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "beats")
	cmd := hiddenProc(t, "", bin, "run", "--identity", "hidden", "--listen", anyPort, "--history", hist,
		"--container", "run-hidepid", "--log-format", "json", "--connection-string", az.ConnectionString(),
		"--", "sh", "-c", rooty+" "+beats+" & wait")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		for _, pid := range beatPids(beats) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	select {
	case err := <-exited:
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 2 || !strings.Contains(out.String(), "hidepid=invisible") || strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
			t.Fatalf("exit %v, want 2 with one line naming hidepid=invisible:\n%s", err, out)
		}
		t.Logf("refused: %s", strings.TrimSpace(out.String()))
		return
	case <-time.After(10 * time.Second):
	}
	// It started: show what follows, from the helper's own lines.
	awaitEvent(t, hist, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
	waitFor(t, "the set-user-ID helper's first line (without it the test shows nothing)", 10*time.Second, func() (bool, string) {
		return len(beatPids(beats)) > 0, "no line in " + beats
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	rel := awaitEvent(t, hist, 20*time.Second, "released", func(r record) bool { return r.Event == "released" })
	time.Sleep(time.Second)
	if last := lastBeat(beats); last.After(rel.T) {
		t.Fatalf("the supervisor did not refuse a /proc with hidepid=invisible: it started, and on SIGTERM released the lease at %s while its command's set-user-ID helper (invisible to it) wrote on until %s (%v later)",
			rel.T.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano), last.Sub(rel.T).Round(time.Millisecond))
	}
	t.Fatalf("the supervisor started under hidepid=invisible with no cgroup instead of refusing:\n%s", out)
}
