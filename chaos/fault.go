package chaos

import (
	"context"
	"errors"
)

// Kind names a fault in the recorded timeline; the checker keys its rules on it.
type Kind string

// The fault kinds (docs/chaos.md#pieces).
const (
	KindCrash     Kind = "crash"
	KindGraceful  Kind = "graceful"
	KindPause     Kind = "pause"
	KindLatency   Kind = "latency"
	KindTimeout   Kind = "timeout"
	KindReset     Kind = "reset"
	KindPartition Kind = "partition"
	KindOutage    Kind = "outage"
	KindBreak     Kind = "break"

	KindLateDelivery    Kind = "late_delivery"    // a request held past the client's timeout, delivered later
	KindLateBreak       Kind = "late_break"       // a follower's Break Lease held past its timeout, delivered later
	KindLostResponse    Kind = "lost_response"    // a request applied at storage, its answer dropped
	KindRefusal         Kind = "refusal"          // storage answers chosen requests with an error instead of applying them
	KindDeleteBlob      Kind = "delete_blob"      // an operator deletes the lock blob
	KindDeleteContainer Kind = "delete_container" // an operator deletes the lock's container

	KindBlockedOutput    Kind = "blocked_output"     // a process's stdout/stderr a full pipe nobody reads
	KindOutputReaderGone Kind = "output_reader_gone" // the reader of a process's stdout/stderr pipe exited: writes get EPIPE/SIGPIPE

	KindOperatorMetadata Kind = "operator_metadata" // an operator writes the lock's metadata (bad term, huge term, no holder)
	KindRollback         Kind = "metadata_rollback" // storage goes back in time: lock metadata and ledger restored to an earlier copy
	KindSlowReads        Kind = "slow_member_reads" // one worker's reads of some blobs (members' reports) slowed, below the request timeout

	KindDeleteDocument   Kind = "delete_document"   // an operator deletes a shard pool's document (the assignment, the summary, a report)
	KindDocumentRollback Kind = "document_rollback" // a pool document put back to an earlier copy (a restore, an operator's re-upload)
	KindCorruptDocument  Kind = "corrupt_document"  // a pool document overwritten with bytes that are not the document
	KindLedgerBlobType   Kind = "ledger_blob_type"  // a ledger segment re-uploaded as another blob type (az storage blob upload's block blob)

	KindSupervisorFreeze Kind = "supervisor_freeze" // a `blobleader run` supervisor SIGSTOPped alone, its command running on
	KindJobStop          Kind = "job_stop"          // a job-control signal (SIGTSTP, SIGTTIN, SIGTTOU) to a supervisor alone
	KindEscape           Kind = "escape"            // a supervised command starts jobs in a new session and a new process group
	KindGuardKill        Kind = "guard_kill"        // a `blobleader run` supervisor's group guard SIGKILLed alone
	KindGuardStop        Kind = "guard_stop"        // a `blobleader run` supervisor's group guard SIGSTOPped alone
	KindForeignOrphan    Kind = "foreign_orphan"    // an orphan its pid-1 supervisor never started, in its pid namespace
	KindShimKill         Kind = "shim_kill"         // a `blobleader run` supervisor's command shim SIGKILLed alone (optionally with a member in a nested cgroup)
	KindShimStop         Kind = "shim_stop"         // a `blobleader run` supervisor's command shim SIGSTOPped alone
	KindForkWalker       Kind = "fork_walker"       // a supervised command starts a process that forks, calls setsid and exits, over and over
	KindNameStop         Kind = "name_stop"         // `killall -STOP NAME` on one host: every process of a supervisor's tree named NAME stopped
)

// TargetAll is the target of faults that hit every worker at once.
const TargetAll = "*"

// Fault is one injectable, removable fault.
//
// Inject puts the fault in place and returns once it is in effect (a crashed
// process has exited, a paused one is stopped, a toxic is on the link). Remove
// undoes it and returns once the system is back (a paused process runs again,
// a restarted worker has been started). Removing a fault that is not in place
// is a no-op, so Remove is safe in cleanups. Both honour ctx: when it ends
// first they return an error wrapping ctx.Err().
type Fault interface {
	Kind() Kind
	// Target is the worker the fault hits, TargetAll, or the lock blob's name.
	Target() string
	Inject(ctx context.Context) error
	Remove(ctx context.Context) error
}

// Rerollable faults act on a share of connections (Toxicity < 1). toxiproxy
// decides once per connection whether a toxic bites, and a client keeps a
// connection that survived, so a long-held fault stops biting; Reroll takes
// its toxics off and puts them back while the fault stays in place (one
// entry on the timeline). A no-op when the fault is not injected.
type Rerollable interface {
	Fault
	Reroll(ctx context.Context) error
}

// Errors shared by the faults.
var (
	ErrInjected    = errors.New("chaos: fault already injected")
	ErrNoTarget    = errors.New("chaos: fault has no target")
	ErrInvalid     = errors.New("chaos: invalid fault parameter")
	ErrNotRunning  = errors.New("chaos: process is not running")
	ErrStillAlive  = errors.New("chaos: process did not exit")
	ErrNotStopped  = errors.New("chaos: process did not stop")
	ErrNoRestarter = errors.New("chaos: process cannot be restarted")
)

// run calls f in its own goroutine and returns its error, or ctx's when ctx
// ends first (f then finishes in the background). It makes blocking library
// calls (toxiproxy waits for every link to take a toxic) cancellable.
func run(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The Launch kinds: conditions a process starts under (launch.go).
const (
	KindFullOutput   Kind = "full_output"   // stdout and stderr on /dev/full: every write fails with ENOSPC
	KindHiddenProc   Kind = "hidden_proc"   // /proc mounted hidepid=invisible in a private mount namespace, run as another user
	KindPIDNamespace Kind = "pid_namespace" // pid 1 of a new pid namespace, with /proc of its own
	KindNoClone3     Kind = "no_clone3"     // a seccomp filter answers clone3 with ENOSYS (Docker's default profile)
	KindConfine      Kind = "confine"       // started in a cgroup of its own, killed as a whole at the end (cgroup.kill)
	KindNoCgroup     Kind = "no_cgroup"     // no cgroup v2 mounted in its mount namespace: a supervisor falls back to its process tree
)
