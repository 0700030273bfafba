package chaos

import "fmt"

// PIDNamespace starts a process as pid 1 of a new pid namespace with a
// /proc of its own (`unshare --pid --fork --mount-proc`), as a container's
// entry point is: every orphan of the namespace is re-parented to it, also
// one it never started (ForeignOrphan). It needs root and util-linux
// unshare. Unlike the other launches it forks: the Process the faults see
// is unshare, whose death (--kill-child) SIGKILLs the namespace's pid 1 and
// with it everything in the namespace.
type PIDNamespace struct{}

var _ Launch = (*PIDNamespace)(nil)

func (f *PIDNamespace) Kind() Kind { return KindPIDNamespace }

// Wrap runs argv through unshare.
func (f *PIDNamespace) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: PIDNamespace: empty command", ErrInvalid)
	}
	return append([]string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--"}, argv...), nil
}
