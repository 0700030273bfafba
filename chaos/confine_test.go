package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// confineT makes a Confine for the test, killed and removed at its end; it
// skips (naming why) where no cgroup can be made.
func confineT(t *testing.T) *Confine {
	t.Helper()
	c, err := NewConfine(strings.ReplaceAll(t.Name(), "/", "_"))
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("Confine needs root or a delegated cgroup v2: %v", err)
		}
		t.Fatalf("NewConfine as root: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Kill(10 * time.Second); err != nil {
			t.Errorf("confine cleanup: %v", err)
		}
	})
	return c
}

// A confined process keeps its pid, starts in the cgroup, and everything it
// started dies with Kill, which removes the cgroup too.
func TestConfine_HoldsTheProcessAndWhatItStartsAndKillsThemAll(t *testing.T) {
	c := confineT(t)
	argv, err := c.Wrap([]string{"sh", "-c", `echo $$ >&3; sleep 60 & exec sleep 60`})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() { _ = cmd.Wait() }()
	b := make([]byte, 32)
	n, _ := r.Read(b)
	if got := strings.TrimSpace(string(b[:n])); got != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("the wrapped process has pid %s, want the started pid %d (the wrapper must exec)", got, cmd.Process.Pid)
	}
	waitFor(t, "the process and its child in cgroup "+c.Dir, 5*time.Second, func() (bool, string) {
		procs := cgroupProcs(c.Dir)
		return len(procs) >= 2, fmt.Sprintf("it holds %v", procs)
	})
	if !c.Populated() {
		t.Fatal("Populated is false with two processes in the cgroup")
	}
	members := cgroupProcs(c.Dir)
	if err := c.Kill(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range members {
		if ProcAlive(p) {
			t.Errorf("pid %d still runs after Kill", p)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Fatalf("cgroup %s still exists after Kill: %v", c.Dir, err)
	}
	if (&Confine{}).Kind() != KindConfine {
		t.Fatal("kind")
	}
}

// Without a cgroup, or a command, Wrap refuses.
func TestConfine_NeedsACgroupAndACommand(t *testing.T) {
	if _, err := (&Confine{}).Wrap([]string{"true"}); err == nil {
		t.Fatal("Wrap without a cgroup: no error")
	}
	if _, err := (&Confine{Dir: "/x"}).Wrap(nil); err == nil {
		t.Fatal("Wrap without a command: no error")
	}
}
