package chaos

import "fmt"

// NoCgroup starts a process in a mount namespace of its own where no cgroup
// v2 hierarchy is mounted, as on a host or in a container where cgroups are
// not delegated: a `blobleader run` supervisor then tracks its command by
// its process tree alone (tree mode), whatever its privileges. Nothing
// outside the namespace changes, and the process stays in its cgroup (a
// Confine still holds it). It needs root and util-linux unshare; each step
// execs, so the pid is the process's own.
type NoCgroup struct{}

var _ Launch = (*NoCgroup)(nil)

func (f *NoCgroup) Kind() Kind { return KindNoCgroup }

// Wrap runs argv through unshare and a shell that unmounts the v2
// hierarchy before it execs argv.
func (f *NoCgroup) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: NoCgroup: empty command", ErrInvalid)
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	return append([]string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `umount -l "$0" || exit 97; exec "$@"`, mount}, argv...), nil
}
