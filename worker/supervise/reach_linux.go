package supervise

import (
	"os"
	"syscall"
)

// CanKillAnyUser reports whether groups started here get a cgroup of their
// own, whose cgroup.kill reaches members of any user (see cgroup_linux.go).
// It makes and removes one empty cgroup to find out.
func CanKillAnyUser() bool {
	c, err := newCgroup()
	if err != nil {
		return false
	}
	c.remove()
	return true
}

// CheckReachable refuses, before anything runs, a command this process
// could start but not stop: an executable with the set-user-ID bit owned by
// another user, run by a supervisor that is not root and has no cgroup kill
// (a *CommandError matching ErrOutOfReach).
// The kernel lets a process signal another only if their user IDs match
// (real or effective of the sender against real or saved of the target);
// a set-user-ID program that makes its new user its real one (sudo, su,
// doas, pkexec do) is then out of reach. The set-group-ID bit alone does
// not change that rule and is accepted.
//
// Not detectable here: a command that runs such a program later (a script
// calling sudo), or one with file capabilities (CAP_SETUID): Group.CheckReach
// finds those once they have changed user.
func CheckReachable(path string) error {
	euid := os.Geteuid()
	if euid == 0 {
		return nil // root may signal any process of its user namespace
	}
	fi, err := os.Stat(path)
	if err != nil {
		return commandError(ErrNotFound, "%v", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&os.ModeSetuid == 0 || int(st.Uid) == euid {
		return nil
	}
	if CanKillAnyUser() {
		return nil
	}
	return commandError(ErrOutOfReach, "%q is set-user-ID to uid %d and this supervisor (uid %d, no writable cgroup v2) could not stop it: run the supervisor as that user instead (sudo blobleader run -- job, not blobleader run -- sudo job)",
		path, st.Uid, euid)
}
