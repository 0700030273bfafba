package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// nobody is the unprivileged user the out-of-reach tests run a supervisor
// as: a process may signal another only if their user IDs match, and root
// may signal anyone.
const nobody = 65534

// reachDir makes a directory every user can read and write, with a copy of
// the blobleader binary nobody may run. It skips the test with one line
// when this process cannot change user.
func reachDir(t *testing.T) (dir, bin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the supervisor as another user (uid 65534) and make a set-user-ID program: not root here")
	}
	dir, err := os.MkdirTemp("", "blobleader-reach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "blobleader")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// becomeRoot builds a set-user-ID root program that makes root its real
// user (as sudo does), then writes a line to its argument every 50 ms,
// ignoring SIGTERM, until killed.
func becomeRoot(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "rooty.go")
	if err := os.WriteFile(src, []byte(`package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if err := syscall.Setuid(0); err != nil {
		fmt.Fprintln(os.Stderr, "rooty:", err)
		os.Exit(1)
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for {
		f, err := os.OpenFile(os.Args[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %d\n", os.Getpid(), time.Now().UnixNano())
			f.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rooty")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the set-user-ID helper: %v\n%s", err, b)
	}
	if err := os.Chmod(out, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	return out
}

// A command that changes its user after the start (a script that execs a
// set-user-ID program: not knowable up front) is found out of reach within
// a renew interval and reported loudly (history, /healthz, metric); then a
// SIGTERM must not release the lease while it runs: the supervisor keeps
// leading until it is gone, and only then releases and exits.
func TestRun_ACommandOutOfReachKeepsTheLeaseUntilItIsGone(t *testing.T) {
	t.Parallel()
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		dir, bin := reachDir(t)
		rooty := becomeRoot(t, dir)
		az := azuritetest.StartT(t)
		hist, beats := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "beats")
		cmd := exec.Command(bin, "run", "--identity", "unpriv", "--listen", anyPort, "--history", hist,
			"--container", "run-reach", "--log-format", "json", "--", "sh", "-c", "exec "+rooty+" "+beats)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		cmd.Env = []string{"PATH=/usr/bin:/bin", "AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		rootPID := 0
		t.Cleanup(func() {
			if rootPID > 0 {
				_ = syscall.Kill(rootPID, syscall.SIGKILL)
			}
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("supervisor stderr:\n%s", stderr.String())
			}
		})
		started := awaitEvent(t, hist, 20*time.Second, "child_started", func(r record) bool { return r.Event == "child_started" })
		rootPID = started.PID
		base := startedURL(t, "supervisor unpriv", stderr.String)
		// 1. Found out of reach within a renew interval (2 s) of the start.
		oor := awaitEvent(t, hist, 5*time.Second, "child_out_of_reach", func(r record) bool { return r.Event == "child_out_of_reach" })
		sp.Bound(t, "child_out_of_reach after child_started (bound one renew interval 2 s + 1 s)", started.T, 2*time.Second+time.Second, oor.T)
		if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "out of reach") {
			t.Errorf("/healthz = %d %q, want 503 naming the command out of reach", code, body)
		}
		if _, body := get(t, base+"/metrics"); !strings.Contains(body, "blobleader_child_out_of_reach 1") {
			t.Errorf("/metrics lacks blobleader_child_out_of_reach 1")
		}
		// 2. SIGTERM: no release while it runs (well past shutdown grace).
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		termAt := time.Now()
		for time.Since(termAt) < 10*time.Second {
			for _, r := range readRecords(t, hist) {
				if r.Event == "released" {
					t.Fatalf("the lease was released %v after SIGTERM while the out-of-reach command %d still runs", r.T.Sub(termAt), rootPID)
				}
			}
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("the supervisor exited (%v) %v after SIGTERM while its out-of-reach command %d still runs", err, time.Since(termAt), rootPID)
			default:
			}
			time.Sleep(100 * time.Millisecond)
		}
		if b, _ := os.ReadFile(beats); !strings.Contains(string(b), strconv.Itoa(rootPID)) {
			t.Fatalf("the set-user-ID command %d never wrote: the test shows nothing", rootPID)
		}
		// 3. Gone (we are root): reaped, released, exit 0.
		_ = syscall.Kill(rootPID, syscall.SIGKILL)
		killed := time.Now()
		select {
		case err := <-exited:
			exited <- err
			if err != nil {
				t.Fatalf("supervisor exit after its command was gone: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the supervisor did not finish within 15s of its out-of-reach command's death")
		}
		got := strings.Join(events(readRecords(t, hist)), ",")
		if !strings.HasSuffix(got, "child_exited,stopped_leading,released") {
			t.Fatalf("history %s: want it to end child_exited,stopped_leading,released", got)
		}
		t.Logf("out of reach found %v after the start; lease held %v after SIGTERM; released %v after the command died",
			oor.T.Sub(started.T).Round(time.Millisecond), killed.Sub(termAt).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	})
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
