package chaos

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The fault makes a command that implements EscapeSignal start jobs out of
// its process group: one in a new session, one in a new process group.
func TestEscape_TheCommandStartsJobsOutOfItsGroup(t *testing.T) {
	p := startFixture(t, "escaper")
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	f := &Escape{PID: pid, Name: p.Name()}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	var jobs []int
	waitFor(t, "the command's 2 escaping jobs", 5*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(p.beat + ".jobs")
		jobs = jobs[:0]
		for _, l := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(l); err == nil {
				jobs = append(jobs, n)
			}
		}
		return len(jobs) >= 2, fmt.Sprintf("jobs %v", jobs)
	})
	t.Cleanup(func() {
		for _, j := range jobs {
			_ = syscall.Kill(j, syscall.SIGKILL)
		}
	})
	pgid, _ := syscall.Getpgid(pid)
	sid, _ := getsid(pid)
	s0, _ := getsid(jobs[0])
	g1, _ := syscall.Getpgid(jobs[1])
	if s0 == sid || g1 == pgid {
		t.Fatalf("jobs did not escape: command pgid %d sid %d; job %d sid %d; job %d pgid %d", pgid, sid, jobs[0], s0, jobs[1], g1)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
}

func TestEscape_NeedsAPid(t *testing.T) {
	if err := (&Escape{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("inject = %v, want ErrInvalid", err)
	}
}

func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
