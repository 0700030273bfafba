package supervise

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup of the group's own (cgroup v2, with cgroup.kill: Linux ≥ 5.14) is
// the strongest reach the supervisor can have: the command's shim moves
// itself into it before it forks the command (so not one instruction of the
// command runs outside, and no clone3 is needed), nothing it
// starts can leave it without write access to the hierarchy, and a write to
// cgroup.kill SIGKILLs every member whatever its user, process group or
// session. It needs write access to the supervisor's own cgroup in a v2
// hierarchy: root, or a cgroup delegated to the supervisor's user (systemd
// Delegate=yes). Elsewhere the group falls back to its process tree
// (proc_linux.go) and says so (Group.Cgroup is empty).

// cgroup is one group's cgroup directory.
type cgroup struct {
	dir string
}

// cgroupPrefix starts the name of every cgroup a supervisor makes:
// blobleader-<pid>-<start>-<random>, where <start> is the supervisor's
// start time (clock ticks after boot: with the pid, it names one process
// for the life of the machine) and <random> keeps two supervisors of the
// same pid and start (pid 1 of two containers, in the same tick) apart. A
// name never repeats, so a directory left behind never collides with a new
// one (a pid-based name did, for pid 1, and moved every later start to the
// process tree).
const cgroupPrefix = "blobleader-"

// leftoverAge: an empty cgroup of ours older than this is a leftover (a
// live group's is empty only between its mkdir and its shim's join).
const leftoverAge = 10 * time.Second

// leftovers is the once-per-process sweep of cgroups of ours that
// supervisors which are gone left behind (removeLeftovers), and what it
// could not remove because processes still run there.
var leftovers struct {
	once sync.Once
	held []Leftover
}

// Leftover is a cgroup of ours that a supervisor which is gone left behind
// with processes still in it: what the command forked, when supervisor,
// guard and shim died at once (docs/failover.md, "Commands"). It is left to
// whoever killed them.
type Leftover struct {
	Dir       string // the cgroup's directory
	Processes int    // how many processes it held when it was found
}

// HeldLeftovers are the cgroups of ours that this process's first cgroup
// found left behind with processes in them (nil before that, or where no
// cgroup was made). The supervisor logs them; this package never writes
// to stderr itself.
func HeldLeftovers() []Leftover {
	return leftovers.held
}

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
	leftovers.once.Do(func() { leftovers.held = removeLeftovers(parent) })
	dir := filepath.Join(parent, cgroupName())
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("supervise: make a cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: no cgroup.kill in %s (Linux < 5.14?)", dir)
	}
	if err := unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: cannot move a process into %s: %w", dir, err)
	}
	return &cgroup{dir: dir}, nil
}

// cgroupName is a name no other cgroup has had (see cgroupPrefix).
func cgroupName() string {
	var start uint64
	if p, ok := readProc(os.Getpid()); ok {
		start = p.start
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s%d-%d-%s", cgroupPrefix, os.Getpid(), start, hex.EncodeToString(r[:]))
}

// removeLeftovers removes, once per process, the cgroups of ours under
// parent that a supervisor killed together with its guard left behind:
// those where no process runs (none in the subtree: a command may have
// nested cgroups of its own) and that are older than leftoverAge. One that
// still holds processes is left to whoever killed them, and returned.
func removeLeftovers(parent string) (held []Leftover) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < leftoverAge {
			continue
		}
		if n := len(cgroupPids(dir)); n > 0 {
			held = append(held, Leftover{Dir: dir, Processes: n})
			continue
		}
		_ = removeTree(dir, 0) // fails while a member runs: then it is not a leftover
	}
	return held
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

// pids lists the members that have not exited, in the whole subtree (a
// zombie has left the cgroup: it runs nothing, its parent still has to
// reap it).
func (c *cgroup) pids() []int { return cgroupPids(c.dir) }

// populated reports whether a process runs anywhere in the subtree
// (cgroup.events: the kernel's own count, which no fork can outrun).
func (c *cgroup) populated() bool { return cgroupPopulated(c.dir) }

func cgroupPopulated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // unreadable: not proven empty
	}
	return !bytes.Contains(b, []byte("populated 0"))
}

// cgroupPids lists the processes of dir and of every cgroup below it.
func cgroupPids(dir string) []int {
	var out []int
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, cgroupPids(filepath.Join(dir, e.Name()))...)
		}
	}
	return out
}

// remove deletes the cgroup and every cgroup the command nested in it,
// deepest first; a few tries each, as the kernel may take a moment to let
// go of members that just exited.
func (c *cgroup) remove() { _ = removeTree(c.dir, 20) }

// removeTree removes dir and the cgroups below it, deepest first, trying
// each up to tries more times, 5 ms apart.
func removeTree(dir string, tries int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name()), tries); err != nil {
				return err
			}
		}
	}
	for i := 0; ; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if i >= tries {
			return err
		}
		time.Sleep(killRound)
	}
}
