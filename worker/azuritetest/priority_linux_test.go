package azuritetest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Where the test may raise priorities, every thread of a started server
// runs at the priority; where it may not, the server still starts, at the
// ordinary priority.
func TestStart_RunsTheServerAboveTheLoad(t *testing.T) {
	s := StartT(t)
	want := 0
	if mayRaise() {
		want = priority
	}
	nices := threadNices(t, s.Pid())
	if len(nices) == 0 {
		t.Fatalf("no threads read for server pid %d", s.Pid())
	}
	for tid, n := range nices {
		if n != want {
			t.Errorf("server thread %d runs at nice %d, want %d (of %d threads: %v)", tid, n, want, len(nices), nices)
		}
	}
}

// mayRaise reports whether this process may lower a nice value, by trying
// on itself (one thread, restored at once).
func mayRaise() bool {
	tid := syscall.Gettid()
	was, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return false
	}
	// getpriority(2)'s raw value is 20 - nice.
	nice := 20 - was
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice-1); err != nil {
		return false
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
	return true
}

// threadNices reads each thread's nice value from /proc/pid/task/*/stat
// (field 19).
func threadNices(t *testing.T, pid int) map[int]int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest) // from field 3, the state
		n, err := strconv.Atoi(f[19-3])
		if err != nil {
			t.Fatalf("stat of %s: %q", task.Name(), b)
		}
		tid, _ := strconv.Atoi(task.Name())
		out[tid] = n
	}
	return out
}
