package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A cgroup of ours that a dead supervisor left with processes in it (its
// supervisor, guard and shim were killed at once) is named by the next
// supervisor that starts beside it — in a JSON log line like every other,
// never as a bare line on stderr that breaks a log pipeline reading JSON.
// The supervisor runs inside a cgroup of the test's own, so the planted
// leftover is seen by no other supervisor on this machine.
func TestRun_ACgroupLeftBehindIsNamedInAJSONLine(t *testing.T) {
	t.Parallel()
	home := privateCgroup(t)
	leftover := filepath.Join(home, "blobleader-1-1-000000000000")
	if err := os.Mkdir(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	if err := os.WriteFile(filepath.Join(leftover, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
		t.Fatalf("move the sleeper into the planted cgroup: %v", err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(leftover, old, old); err != nil {
		t.Skipf("cannot age a cgroup directory here (%v): the leftover sweep only takes cgroups older than 10s", err)
	}

	az := azuritetest.StartT(t)
	var stderr syncBuffer
	// The shell joins the test's cgroup, then becomes the supervisor.
	sup := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", home,
		binary, "run", "--identity", "leftover", "--listen", anyPort,
		"--container", "leftover", "--log-format", "json", "--", "sleep", "300")
	sup.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString())
	sup.Stderr = &stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sup.Process.Kill()
			_ = sup.Wait()
		}
	})
	awaitServing(t, startedURL(t, "supervisor", stderr.String))
	waitFor(t, "a cgroup_leftover line for "+leftover+", which holds a live process", 20*time.Second, func() (bool, string) {
		out := stderr.String()
		return strings.Contains(out, `"event":"cgroup_leftover"`), "stderr:\n" + out
	})
	_ = sup.Process.Signal(os.Interrupt)
	_ = sup.Wait()
	stopped = true

	var found bool
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a line on the supervisor's stderr is not JSON: %q", sc.Text())
		}
		if line["event"] == "cgroup_leftover" {
			found = true
			if line["cgroup"] != leftover || line["processes"] != float64(1) {
				t.Errorf("cgroup_leftover line = %v, want cgroup %s with 1 process", line, leftover)
			}
		}
	}
	if !found {
		t.Fatalf("no cgroup_leftover line for %s, which holds a live process; stderr:\n%s", leftover, stderr.String())
	}
}

// privateCgroup makes a cgroup v2 directory for the test under this
// process's own cgroup and removes it (killing what is left in it) at
// cleanup. It skips where this process may not write the hierarchy.
func privateCgroup(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a cgroup of the test's own")
	}
	mount, self := cgroup2(t)
	var r [6]byte
	_, _ = rand.Read(r[:])
	dir := filepath.Join(mount, self, "bltest-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() { killCgroupTree(t, dir) })
	return dir
}

// killCgroupTree SIGKILLs everything in dir's subtree and removes it,
// deepest first, within 10 s plus the machine's measured stall (waitFor).
func killCgroupTree(t *testing.T, dir string) {
	t.Helper()
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	waitFor(t, "cgroup "+dir+" removed after cgroup.kill", 10*time.Second, func() (bool, string) {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				return false, err.Error()
			}
		}
		return true, ""
	})
}

// cgroup2 finds the v2 hierarchy's mount point and this process's path in
// it, or skips.
func cgroup2(t *testing.T) (mount, self string) {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, tail := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(tail) >= 1 && tail[0] == "cgroup2" {
			mount = f[4]
			break
		}
	}
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return mount, p
		}
	}
	t.Skip("this process has no cgroup v2 path")
	return "", ""
}
