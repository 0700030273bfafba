package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// Fault kinds (docs/chaos.md#pieces). Crash, graceful and break are instantaneous (only
// Start matters); the others last from Start to End.
const (
	FaultCrash     = "crash"     // SIGKILL / container group stopped, at Start
	FaultGraceful  = "graceful"  // SIGTERM, at Start; the worker logs `released`
	FaultPause     = "pause"     // SIGSTOP at Start, SIGCONT at End
	FaultLatency   = "latency"   // slow storage for Target, Start..End
	FaultTimeout   = "timeout"   // black-holed storage for Target, Start..End
	FaultReset     = "reset"     // connection resets for Target, Start..End
	FaultPartition = "partition" // Target cut off from storage, Start..End
	FaultOutage    = "outage"    // storage down for everyone, Start..End
	FaultBreak     = "break"     // operator BreakLease(0), at Start

	// The request-level and operator fault classes (chaos.Kind values).
	FaultLateDelivery    = "late_delivery"    // Target's chosen requests held past its timeout, delivered later; Start..End
	FaultLostResponse    = "lost_response"    // Target's chosen requests applied at storage, answers dropped; Start..End
	FaultRefusal         = "refusal"          // Target's chosen requests answered with an error by storage, not applied; Start..End
	FaultDeleteBlob      = "delete_blob"      // operator deletes the lock blob, at Start
	FaultDeleteContainer = "delete_container" // operator deletes the lock's container, at Start

	// FaultOperatorMetadata: an operator breaks the lease and writes the
	// lock's metadata by hand (a bad term, a term that cannot grow, no
	// holder) at Start, and repairs it at End.
	FaultOperatorMetadata = "operator_metadata"
	// FaultRollback: storage goes back in time at Start — the lock's record
	// and the ledger restored to an earlier copy (the lease broken by the
	// write). No term may be handed out twice across it (S2).
	FaultRollback = "metadata_rollback"
	// FaultSlowReads: Target's reads of some blobs (a --shards leader's
	// member reports) slowed below the request timeout, Start..End.
	FaultSlowReads = "slow_member_reads"
	// FaultLedgerBlobType: a ledger's last segment re-uploaded as a block
	// blob at Start: its writer hands on and the next one continues past it
	// (the ledger's S2 rules still hold). In a shard pool it hands the
	// shard to its standby, and the pool rebalances after.
	FaultLedgerBlobType = "ledger_blob_type"

	// Run mode's host-side faults (chaos.Kind values).
	FaultSupervisorFreeze = "supervisor_freeze" // a supervisor SIGSTOPped alone (its command runs on), Start..End
	FaultJobStop          = "job_stop"          // a job-control stop signal to a supervisor alone, at Start (SIGCONT at End)
	FaultNameStop         = "name_stop"         // `killall -STOP NAME` on a supervisor's tree (the supervisor stopped), Start..End
)

// AllWorkers as a Fault.Target (or an empty Target) means the fault hits
// every worker.
const AllWorkers = "*"

// Fault is one fault the harness injected, timed by the harness's clock.
// Stamp Start just before injecting (sending the signal, adding the toxic,
// breaking the lease) and End just after healing; a crash or pause stamped a
// moment early is harmless (deadlines the victim logs in that instant still
// count), a late one lengthens the belief the checker grants the victim.
type Fault struct {
	Kind   string    `json:"kind"`         // one of the Fault* kinds
	Target string    `json:"target"`       // worker identity, or "" / AllWorkers
	Start  time.Time `json:"start"`        // injected
	End    time.Time `json:"end,omitzero"` // healed; zero for instantaneous faults or never healed
}

func (f Fault) String() string {
	tgt := f.Target
	if tgt == "" {
		tgt = AllWorkers
	}
	s := fmt.Sprintf("fault %s on %s at %s", f.Kind, tgt, f.Start.UTC().Format(time.RFC3339Nano))
	if !f.End.IsZero() {
		s += " until " + f.End.UTC().Format(time.RFC3339Nano)
	}
	return s
}

func (f Fault) hitsAll() bool { return f.Target == "" || f.Target == AllWorkers }

// hits reports whether the fault targets identity id.
func (f Fault) hits(id string) bool { return f.hitsAll() || f.Target == id }

// Worker is the cluster's view of one worker at run end.
type Worker struct {
	Identity   string `json:"identity"`
	Alive      bool   `json:"alive"`      // the process (container) is running
	Contending bool   `json:"contending"` // it still polls for the lease or leads (e.g. its acquire count moves)
}

// LedgerEntry is one entry of the reference task's fenced ledger, as read back
// from storage (same fields as worker/ledger.Entry).
type LedgerEntry struct {
	Seq    int64     `json:"seq"`
	Term   int64     `json:"term"`
	Holder string    `json:"holder"`
	At     time.Time `json:"at"`
}

// Run is everything the checker judges.
type Run struct {
	Events  []Event       // merged histories (ReadHistory); Check sorts a copy by T
	Ledger  []LedgerEntry // in storage order; nil when the run has no ledger
	Faults  []Fault       // every fault injected, in any order
	Start   time.Time     // run start; zero: the first event's time
	End     time.Time     // run end; zero: the last event's time
	Workers []Worker      // at run end, one per started incarnation
	// Requires is the minimum evidence the scenario needs; a run that lacks
	// it fails with an `evidence` violation instead of passing on nothing.
	Requires Requirements
	// GrantedRenews is storage's side of the renews: every renew a worker's
	// proxy saw storage answer 2xx (local backend; nil elsewhere). A killed
	// leader's last renew may be granted and never logged; these say when
	// its lease could last until (the crash rule in checkFailovers).
	GrantedRenews []GrantedRenew
	// Slots maps an identity to its worker's slot: the place in the cluster
	// its restarts keep (w1 for w1, w1.2, …) and its proxy is named by. An
	// identity missing here is its own slot.
	Slots map[string]string
	// LockPath is the URL path of the lock blob the election renews
	// (/account/container/blob); only GrantedRenews of it count for the
	// election's L1. Empty: none count.
	LockPath string
	// Sched is the harness's CPU probe over the run (stall.go); nil when
	// the backend runs none: every timing bound is then judged as
	// designed, with no stall added.
	Sched *Sched
}

// GrantedRenew is one renew storage granted, as its worker's proxy saw it.
type GrantedRenew struct {
	Slot     string    `json:"slot"`     // the proxy's worker slot (Run.Slots)
	Path     string    `json:"path"`     // the renewed blob's URL path: the lock's, or (shard mode) a shard's
	Arrived  time.Time `json:"arrived"`  // at the proxy, from the worker
	Answered time.Time `json:"answered"` // storage's 2xx came back: the lease runs at most L past this
}

// Bounds returns Start and End, each defaulted from the events when zero.
func (r Run) Bounds() (start, end time.Time) {
	start, end = r.Start, r.End
	if len(r.Events) == 0 {
		return start, end
	}
	if start.IsZero() {
		start = r.Events[0].T
		for _, e := range r.Events {
			if e.T.Before(start) {
				start = e.T
			}
		}
	}
	if end.IsZero() {
		for _, e := range r.Events {
			if e.T.After(end) {
				end = e.T
			}
		}
	}
	return start, end
}

// Params are the election's timing parameters (with their derived rules,
// e.g. RequestTimeout) and the checker's tolerances.
type Params struct {
	election.Timing
	Epsilon time.Duration // slack for the acquire and metadata write after a successful poll; default 1 s
	// ClockSkew is the tolerance wherever two clocks are compared: worker
	// events carry each worker's wall clock, faults the harness's. Overlaps
	// and bound overruns no larger than it are not violations. 0 when
	// everything runs on one machine.
	ClockSkew time.Duration
	// Early takeover (takeover.go): T and the break period B the workers
	// run with; 0 when it is off. L1 after a crash or freeze of a
	// heartbeating leader is then the shorter of the lease's bound and
	// T + B + 2·1.1·P + 5·request timeout + ε.
	TakeoverAfter time.Duration
	BreakPeriod   time.Duration
}

// DefaultParams returns the worker's default timings, Epsilon 1 s and no
// clock skew.
func DefaultParams() Params {
	return Params{Timing: election.DefaultTiming(), Epsilon: time.Second}
}

// ErrParams is wrapped by Check for unusable parameters.
var ErrParams = errors.New("checker: invalid params")

func (p Params) normalized() (Params, error) {
	var bad []string
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"LeaseDuration", p.LeaseDuration}, {"RenewDeadline", p.RenewDeadline}, {"RenewInterval", p.RenewInterval}, {"RetryPeriod", p.RetryPeriod}} {
		if f.v <= 0 {
			bad = append(bad, f.name+" must be > 0")
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Epsilon", p.Epsilon}, {"ClockSkew", p.ClockSkew}, {"TakeoverAfter", p.TakeoverAfter}, {"BreakPeriod", p.BreakPeriod}} {
		if f.v < 0 {
			bad = append(bad, f.name+" must be >= 0")
		}
	}
	if len(bad) > 0 {
		return p, fmt.Errorf("%w: %s", ErrParams, strings.Join(bad, "; "))
	}
	return p, nil
}

// retry is the follower's worst poll gap, P·1.1 (±10 % jitter).
func (p Params) retry() time.Duration { return p.RetryPeriod + p.RetryPeriod/10 }

// ParseLedger reads ledger entries as a JSON array or as one JSON object a
// line (the `worker ledger --json` output either way). Unknown fields are
// ignored.
func ParseLedger(r io.Reader) ([]LedgerEntry, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("checker: read ledger: %w", err)
	}
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("[")) {
		var out []LedgerEntry
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, fmt.Errorf("checker: parse ledger: %w", err)
		}
		return out, nil
	}
	var out []LedgerEntry
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e LedgerEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("checker: parse ledger line %d: %w", i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// paused reports kinds that freeze the target process from Start to End:
// a pause, or a supervisor frozen alone (its election is paused all the
// same).
func paused(kind string) bool {
	return kind == FaultPause || kind == FaultSupervisorFreeze || kind == FaultNameStop
}
