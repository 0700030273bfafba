package supervise

import (
	"os"
	"path/filepath"
	"time"
)

// GuardName is the argv[0] of a group guard: a binary that calls RunGuard
// when IsGuard (blobleader's main does) can be a Spec's Guard.
//
// Why a separate process: a process that knows a deadline must not be the
// only one able to enforce it when it can be frozen. When the supervisor is
// SIGKILLed, the command gets the parent-death signal, but what the command
// forked does not; when it is frozen or blocked, nothing of it runs at all.
// The guard is started before the command, holds the read end of a pipe
// whose only write end is the supervisor's, learns the group (its process
// group, its shim, its cgroup) through it, and the leadership's deadline,
// extended on every renew (Group.Extend; the messages are
// protocol_linux.go's). It kills the group when the pipe closes without
// the supervisor having said the group ended (the kernel closes it however
// the supervisor dies), or when the deadline passes without an extension.
const GuardName = "blobleader-supervise-guard"

// IsGuard reports whether this process was started as a group guard.
func IsGuard() bool { return filepath.Base(os.Args[0]) == GuardName }

// GuardLoss is a guard that died while its group ran (killed: an OOM kill,
// a `kill -9`), as Group.GuardLost reports it.
type GuardLoss struct {
	Time   time.Time // when its death was seen
	Pid    int       // the dead guard
	Status string    // how it ended ("killed by SIGKILL", "exit code 1")
	// NewPid is the guard started in its place; 0 when none could be
	// started (Err): the group then runs unguarded until it is stopped.
	NewPid int
	Err    error
	// Ended: it died as its group ended (while the supervisor was frozen,
	// say): nothing was left to guard, none was started in its place.
	Ended bool
}
