package chaos

import (
	"fmt"
	"strconv"
)

// HiddenProc starts a process in a mount namespace of its own whose /proc is
// mounted with hidepid=invisible (systemd ProtectProc=invisible), as user
// UID: it sees only the processes it could ptrace. A supervisor that tracks
// its command by reading /proc takes a member it cannot see (one that
// became root through a set-user-ID helper) for gone. Nothing outside the
// namespace changes. It needs root (to unshare and mount) and util-linux
// (unshare, setpriv); each step execs, so the pid is the process's own.
type HiddenProc struct {
	UID int `json:"uid"` // the user it runs as; default 65534 (nobody), with the same gid
	// JoinCgroup, if set, is a cgroup directory the process is moved into
	// first (a cgroup delegated to UID).
	JoinCgroup string `json:"join_cgroup"`
}

var _ Launch = (*HiddenProc)(nil)

func (f *HiddenProc) Kind() Kind { return KindHiddenProc }

// Wrap runs argv through unshare, mount and setpriv.
func (f *HiddenProc) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: HiddenProc: empty command", ErrInvalid)
	}
	uid := f.UID
	if uid == 0 {
		uid = 65534
	}
	if uid < 0 {
		return nil, fmt.Errorf("%w: HiddenProc.UID %d", ErrInvalid, f.UID)
	}
	id := strconv.Itoa(uid)
	script := `mount -t proc -o hidepid=invisible proc /proc || exit 97
[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 98
shift
exec setpriv --reuid=` + id + ` --regid=` + id + ` --clear-groups -- "$@"`
	return append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", f.JoinCgroup}, argv...), nil
}
