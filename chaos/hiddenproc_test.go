package chaos

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Under HiddenProc the process runs as nobody, sees only its own processes
// in /proc (not pid 1, which is root's), and has the pid it was started
// with; outside, /proc is unchanged.
func TestHiddenProc_HidesOtherUsersProcessesInItsOwnMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to unshare a mount namespace and mount /proc: not root here")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux): %v", tool, err)
		}
	}
	argv, err := (&HiddenProc{}).Wrap([]string{"sh", "-c", `echo "$$ $(id -u) $(ls -d /proc/1 2>/dev/null || echo hidden)"`})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 || f[0] != strconv.Itoa(cmd.Process.Pid) || f[1] != "65534" || f[2] != "hidden" {
		t.Fatalf("got %q; want its own pid %d, uid 65534, and /proc/1 hidden", out, cmd.Process.Pid)
	}
	if _, err := os.Stat("/proc/1"); err != nil {
		t.Fatalf("/proc outside the namespace changed: %v", err)
	}
	if (&HiddenProc{}).Kind() != KindHiddenProc {
		t.Fatal("kind")
	}
}
