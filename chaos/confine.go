package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Confine starts a process in a cgroup v2 of its own, made by NewConfine
// under the caller's cgroup: everything the process starts is born in it
// (or in a cgroup below it) and cannot leave without write access to the
// hierarchy, so Kill ends all of it at once with cgroup.kill — the kernel's
// kill, which a process that forks, calls setsid and exits faster than any
// /proc scan (ForkWalker) cannot outrun — and removes the cgroups. A test
// that starts something that may escape its supervisor confines it so that
// nothing it started can outlive the test. It needs write access to the
// caller's cgroup v2 (root, or a delegated cgroup) and cgroup.kill (Linux ≥
// 5.14); the shell that joins the cgroup execs, so the pid is the process's
// own.
type Confine struct {
	Dir string `json:"dir"` // the cgroup directory
}

var _ Launch = (*Confine)(nil)

// confinePrefix starts the name of every Confine cgroup: not blobleader-,
// so no supervisor takes it for a leftover of its own.
const confinePrefix = "chaos-confine-"

// NewConfine makes an empty cgroup beside the caller's own cgroup's children
// (under the caller's cgroup), named for name.
func NewConfine(name string) (*Confine, error) {
	self, err := cgroupOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(self, "cgroup.procs")); err != nil {
		return nil, fmt.Errorf("%w: Confine: %v", ErrInvalid, err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	dir := filepath.Join(self, confinePrefix+name+"-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: Confine: make a cgroup: %v", ErrInvalid, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("%w: Confine: no cgroup.kill in %s (Linux < 5.14?)", ErrInvalid, dir)
	}
	return &Confine{Dir: dir}, nil
}

func (f *Confine) Kind() Kind { return KindConfine }

// Wrap runs argv through `sh -c 'echo $$ > DIR/cgroup.procs && exec "$@"'`.
func (f *Confine) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 || f.Dir == "" {
		return nil, fmt.Errorf("%w: Confine needs a cgroup (NewConfine) and a command", ErrInvalid)
	}
	return append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, f.Dir}, argv...), nil
}

// Populated reports whether any process runs in the cgroup or below it.
func (f *Confine) Populated() bool { return cgroupPopulated(f.Dir) }

// Kill SIGKILLs every process in the cgroup and below it, waits up to
// timeout for them to be gone, and removes the cgroups.
func (f *Confine) Kill(timeout time.Duration) error { return cgroupKillTree(f.Dir, timeout) }
