package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A supervisor in a pid namespace of its own whose /proc is still the
// host's (`unshare -p -f` without --mount-proc) would read host pids where
// it means its own: its command's processes, its children, its shim. It
// refuses to start (exit 2, one line naming /proc and the fix) before it
// contends: the storage here is unreachable, so one that contended would
// not exit.
func TestRun_AProcOfAnotherPidNamespaceIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a pid namespace (unshare -p -f): not run as root here")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("no util-linux unshare here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// --kill-child: whatever happens, the namespace dies with unshare.
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--kill-child", "--", binary, "run", "--connection-string="+goodConn, "--listen=127.0.0.1:0", "--", "true")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING=")
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the supervisor did not refuse a /proc of another pid namespace: still running after 20 s (it contended); output:\n%s", out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(string(out), "/proc") || !strings.Contains(string(out), "--mount-proc") {
		t.Fatalf("exit %d, want 2 with one line naming /proc and --mount-proc:\n%s", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 {
		t.Fatalf("want one line, got %d:\n%s", len(lines), out)
	}
	// With a /proc of its own it starts (and then fails on the storage).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	ok := exec.CommandContext(ctx2, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--", binary, "run", "--connection-string="+goodConn, "--listen=127.0.0.1:0", "--help")
	ok.WaitDelay = time.Second
	if out, err := ok.CombinedOutput(); err != nil {
		t.Fatalf("run --help under unshare --mount-proc: %v\n%s", err, out)
	}
}
