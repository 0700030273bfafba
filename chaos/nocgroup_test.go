package chaos

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Under NoCgroup no cgroup v2 is mounted in the process's mount namespace;
// the caller's is untouched. Launches composes it with another condition.
func TestNoCgroup_HidesTheCgroupHierarchyFromTheProcessAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("NoCgroup needs root (unshare --mount): not run as root here")
	}
	if _, err := cgroup2Mount(); err != nil {
		t.Skipf("no cgroup v2 mounted here: nothing to hide (%v)", err)
	}
	full := &FullOutput{Path: os.DevNull}
	argv, err := Launches{full, &NoCgroup{}}.Wrap([]string{"sh", "-c", `grep -c ' - cgroup2 ' /proc/self/mountinfo >&3; true`})
	if err != nil {
		t.Fatal(err)
	}
	if argv[0] != "sh" || !strings.Contains(strings.Join(argv, " "), "unshare") {
		t.Fatalf("Launches{FullOutput, NoCgroup} = %q: want FullOutput's shell outermost, unshare inside", argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var out strings.Builder
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b := make([]byte, 64)
	n, _ := r.Read(b)
	out.Write(b[:n])
	_ = cmd.Wait()
	if got := strings.TrimSpace(out.String()); got != "0" {
		t.Fatalf("the process sees %q cgroup2 mounts, want 0", got)
	}
	if _, err := cgroup2Mount(); err != nil {
		t.Fatalf("the caller lost its cgroup2 mount: %v", err)
	}
	if (Launches{full, &NoCgroup{}}).Kind() != KindNoCgroup || (Launches{}).Kind() != "" {
		t.Fatal("kind")
	}
}
