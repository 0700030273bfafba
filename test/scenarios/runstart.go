package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Starting the command where clone3 is refused (Docker's default seccomp
// profile answers it with ENOSYS; Go's CLONE_INTO_CGROUP needs it): the
// supervisors run under chaos.NoClone3. The command must start in the
// group mode the start line names, and its group must still die with a
// SIGKILLed supervisor (its guard), judged from the commands' own reports.
var Clone3Refused = CommandScenario{"Clone3Refused", clone3Refused}

// The supervisors are pid 1 of pid namespaces of their own (a container's
// entry point). An orphan the leader's command never started is put into
// its namespace (chaos.ForeignOrphan: `docker exec c sh -c 'job &'`). The
// command exits on its own: the supervisor must hand over at once (the
// checker's L1-commands), neither killing the orphan nor waiting for it,
// and reap it once it exits (pid 1's duty).
var ForeignOrphanUnderPid1 = CommandScenario{"ForeignOrphanUnderPid1", foreignOrphan}

func clone3Refused(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.Launch(&chaos.NoClone3{Helper: cluster.NoClone3Binary(t)})}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	log, _ := os.ReadFile(filepath.Join(rc.Dir(), leader.Identity()+".log"))
	mode := `"group":"tree"`
	if strings.Contains(string(log), `"cgroup_kill":true`) {
		mode = `"group":"cgroup"`
	}
	for _, line := range []string{`"msg":"supervising"`, `"msg":"command started"`} {
		if !lineHas(string(log), line, mode) {
			t.Errorf("%s's log has no %s line saying %s:\n%s", leader.Identity(), line, mode, log)
		}
	}
	killed := time.Now()
	inject(t, rc, &chaos.Crash{}, leader)
	took, _ := rc.handedOver(t, started, gc, killed, guardKillBound)
	t.Logf("clone3 refused: command started (%s); supervisor SIGKILLed, its group dead %v later", mode, took.Round(time.Millisecond))
	return nil
}

// lineHas reports whether a line of log contains every one of parts.
func lineHas(log string, parts ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func foreignOrphan(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.Launch(&chaos.PIDNamespace{})}
	leader, _, started := firstCommand(t, rc, []string{"--exit-after", "4s"}, nil)
	orphan := &chaos.ForeignOrphan{}
	inject(t, rc, orphan, leader)
	exited := rc.exitOf(started, 20*time.Second)
	if exited.Cause != "exited" {
		t.Errorf("child_exited %s: want cause exited", exited.Raw)
	}
	if !chaos.ProcAlive(orphan.Pid) {
		t.Errorf("the orphan %d (never started by the command) was killed with the command's group", orphan.Pid)
	}
	next := rc.nextStart(started, 20*time.Second)
	remove(t, rc, orphan) // SIGKILL, and it must be reaped by pid 1
	t.Logf("pid-1 supervisor: command exited on its own, orphan %d left alone, next command %v after the reaped exit",
		orphan.Pid, next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}
