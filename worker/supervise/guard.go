package supervise

import (
	"os"
	"path/filepath"
)

// GuardName is the argv[0] of a group guard: a binary that calls RunGuard
// when IsGuard (blobleader's main does) can be a Spec's Guard.
//
// Why a separate process: when the supervisor is SIGKILLed, the command gets
// the parent-death signal, but what the command forked does not, and nothing
// of the supervisor is left to kill the group. The guard is started before
// the command, holds the read end of a pipe whose only write end is the
// supervisor's, learns the group ID through it, and outlives the supervisor
// by as long as it takes to send the group SIGKILL: the kernel closes the
// pipe when the supervisor dies, however it dies.
const GuardName = "blobleader-supervise-guard"

// guardDone is the line the supervisor writes when the group ended
// normally; the guard then exits without killing anything.
const guardDone = "done"

// IsGuard reports whether this process was started as a group guard.
func IsGuard() bool { return filepath.Base(os.Args[0]) == GuardName }
