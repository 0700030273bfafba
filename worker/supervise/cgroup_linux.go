package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup of the group's own (cgroup v2, with cgroup.kill: Linux ≥ 5.14) is
// the strongest reach the supervisor can have: the command is cloned into
// it (CLONE_INTO_CGROUP, so not one instruction runs outside), nothing it
// starts can leave it without write access to the hierarchy, and a write to
// cgroup.kill SIGKILLs every member whatever its user, process group or
// session. It needs write access to the supervisor's own cgroup in a v2
// hierarchy: root, or a cgroup delegated to the supervisor's user (systemd
// Delegate=yes). Elsewhere the group falls back to its process tree
// (proc_linux.go) and says so (Group.Cgroup is empty).

// cgroup is one group's cgroup directory.
type cgroup struct {
	dir string
	fd  int // an O_PATH descriptor of dir, for CLONE_INTO_CGROUP; -1 once closed
}

var cgroupSeq atomic.Int64

// newCgroup makes a cgroup for one group under the supervisor's own, or
// says why it cannot.
func newCgroup() (*cgroup, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	self, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, self)
	if _, err := os.Stat(filepath.Join(parent, "cgroup.kill")); err != nil && self != "/" {
		return nil, fmt.Errorf("supervise: no cgroup.kill in %s (Linux < 5.14?)", parent)
	}
	dir := filepath.Join(parent, fmt.Sprintf("blobleader-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("supervise: make a cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: no cgroup.kill in %s (Linux < 5.14?)", dir)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: open cgroup %s: %w", dir, err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// cgroup2Mount finds where the v2 hierarchy is mounted (/sys/fs/cgroup on a
// unified host, /sys/fs/cgroup/unified on a hybrid one).
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("supervise: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		f, tail := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(f) >= 5 && len(tail) >= 1 && tail[0] == "cgroup2" {
			return f[4], nil
		}
	}
	return "", errors.New("supervise: no cgroup v2 hierarchy mounted")
}

// ownCgroup is this process's path in the v2 hierarchy ("0::/path").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("supervise: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("supervise: not in a cgroup v2 hierarchy")
}

// kill SIGKILLs every member, whatever its user.
func (c *cgroup) kill() error { return cgroupKill(c.dir) }

// cgroupKill writes cgroup.kill of dir (also used by the guard).
func cgroupKill(dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("supervise: cgroup.kill %s: %w", dir, err)
	}
	return nil
}

// pids lists the members that have not exited (a zombie has left the
// cgroup: it runs nothing, its parent still has to reap it).
func (c *cgroup) pids() []int { return cgroupPids(c.dir) }

func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// remove deletes the (empty) cgroup; a few tries, as the kernel may take a
// moment to let go of members that just exited.
func (c *cgroup) remove() {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	for i := 0; i < 20; i++ {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
