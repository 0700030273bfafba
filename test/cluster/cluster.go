package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/worker/election"
)

// Cluster is a running blobleader cluster under test.
type Cluster interface {
	// Start adds n workers and returns once each answers GET /status.
	Start(ctx context.Context, n int, opts ...Option) ([]Worker, error)
	// Prepare readies, before a caller's start deadline, what a Start with
	// opts needs that takes long to make (a negative control's build), so
	// that the deadline measures the workers' start alone; a no-op where
	// nothing is made.
	Prepare(opts ...Option)
	// Workers returns every worker slot, in start order.
	Workers() []Worker
	// Leader asks every running worker for its role and fails t unless
	// exactly one says it leads.
	Leader(t testing.TB) Worker
	// WaitLeader waits until exactly one worker leads and, when not empty,
	// its identity is not one of except; it fails t after timeout.
	WaitLeader(t testing.TB, timeout time.Duration, except ...string) Worker
	// FindLeader is WaitLeader returning an error instead of failing, for
	// callers that must keep going (the soak) and leave the verdict to the
	// checker.
	FindLeader(timeout time.Duration, except ...string) (Worker, error)
	// Inject binds f to target's handles (nil target: every worker, or the
	// lock blob), injects it and records it in the timeline.
	Inject(ctx context.Context, f chaos.Fault, target Worker) error
	// Remove removes one injected fault and records its end.
	Remove(ctx context.Context, f chaos.Fault) error
	// Heal removes every fault still in place, newest first.
	Heal(ctx context.Context) error
	// History collects what the checker needs. It samples liveness over the
	// given window (how long a contending worker certainly touches storage).
	History(ctx context.Context, window time.Duration) (History, error)
	// Storage is a client for the election's container that reaches storage
	// directly, not through any worker's proxy (for the ledger).
	Storage() *container.Client
	// LockBlob is the lock blob's name (the ledger lives under "<blob>-ledger/").
	LockBlob() string
	// Params are the election timings the workers run with.
	Params() Params
	// Stop stops every worker and the storage; safe to call twice.
	Stop()
}

// Worker is one worker slot.
type Worker interface {
	// Slot is the stable name: w1, w2, …
	Slot() string
	// Identity is the current incarnation's --identity.
	Identity() string
	// Status asks the worker's GET /status.
	Status(ctx context.Context) (Status, error)
	// Running reports whether the current incarnation is alive (paused counts
	// as alive).
	Running() bool
}

// Prober is a Worker whose other HTTP endpoints (/healthz, /readyz,
// /metrics) a scenario can read: the HTTP status and the body.
type Prober interface {
	Probe(ctx context.Context, path string) (code int, body string, err error)
}

// Status is the worker's GET /status answer
// (docs/architecture.md#worker-contracts).
type Status struct {
	Identity      string    `json:"identity"`
	Role          string    `json:"role"` // leader, follower or stopping
	Term          int64     `json:"term"`
	Leader        string    `json:"leader"`
	LeaseDuration string    `json:"leaseDuration"`
	Since         time.Time `json:"since"`
	Shards        []int     `json:"shards,omitempty"`   // --shards workers: the shards it owns (additive)
	Unusable      string    `json:"unusable,omitempty"` // why it cannot lead whatever it wins (additive)
	// Assignment is, on a --shards leader, the assignment in force (additive).
	Assignment *struct {
		Owners   []string `json:"owners"`
		Standbys []string `json:"standbys"`
	} `json:"assignment,omitempty"`
}

// FaultRecord is one injected fault on the run's timeline.
type FaultRecord struct {
	Kind   string          `json:"kind"`
	Target string          `json:"target"` // identity, "*" for all, or container/blob
	Start  time.Time       `json:"start"`
	End    time.Time       `json:"end,omitzero"` // zero while in place
	Params json.RawMessage `json:"params,omitempty"`
}

// WorkerState is one incarnation at the time History was taken.
type WorkerState struct {
	Slot       string `json:"slot"`
	Identity   string `json:"identity"`
	Alive      bool   `json:"alive"`      // the process runs (or is paused)
	Contending bool   `json:"contending"` // its acquire/renew request count moved during the window
	Unsafe     bool   `json:"unsafe"`     // run with --unsafe-no-step-down
	History    string `json:"history"`    // its JSONL history file
	Log        string `json:"log"`        // its stderr/stdout
}

// History is everything a run leaves for the checker and the report.
type History struct {
	Start   time.Time     `json:"start"`
	End     time.Time     `json:"end"`
	Files   []string      `json:"files"` // JSONL histories, one per incarnation
	Faults  []FaultRecord `json:"faults"`
	Workers []WorkerState `json:"workers"`
	// Renews are the renews storage granted, as each worker's storage proxy
	// saw them (local backend only): a killed leader's last renew may be
	// granted and never logged.
	Renews []GrantedRenew `json:"renews,omitempty"`
}

// GrantedRenew is one renew storage answered 2xx, seen by a slot's proxy.
type GrantedRenew struct {
	Slot     string    `json:"slot"`
	Path     string    `json:"path"` // the renewed blob's URL path
	Arrived  time.Time `json:"arrived"`
	Answered time.Time `json:"answered"`
}

// Params are the settings passed to every worker: the election's timings
// (with their derived rules, e.g. RequestTimeout) and the task's.
type Params struct {
	election.Timing
	Tick          time.Duration // leader task period
	ShutdownGrace time.Duration // grace for the task on SIGTERM
	// Early takeover (docs/failover.md#early-takeover): 0 is off.
	TakeoverAfter time.Duration // T, --takeover-after
}

// FastParams is README's fast profile (election.FastConfig: D 1.5 s, renew
// 0.5 s, P 0.5 s, early takeover after T 2.25 s).
func FastParams() Params {
	p := DefaultParams()
	f := election.FastConfig("")
	p.Timing, p.TakeoverAfter = f.Timing, f.TakeoverAfter
	return p
}

// DefaultParams are the worker's default timings with a faster leader task,
// so the ledger sees several writes per term.
func DefaultParams() Params {
	return Params{Timing: election.DefaultTiming(), Tick: 500 * time.Millisecond, ShutdownGrace: 2 * time.Second}
}

// Option configures the workers Start adds.
type Option func(*workerOpts)

type workerOpts struct {
	unsafe     bool
	earlyBreak bool // --unsafe-early-break (UnsafeEarlyBreak)
	args       []string
	command    []string // run mode (RunCommand): the command after --
	// blockable: stdout/stderr through a chaos.OutputPipe, so that
	// chaos.BlockedOutput can block them (BlockableOutput).
	blockable bool
	launch    chaos.Launch // nil: started as they are (Launch)
}

// BlockableOutput sends the workers' stdout and stderr through a pipe the
// harness drains into their log files (chaos.OutputPipe), so that a
// chaos.BlockedOutput fault can make it a full pipe nobody reads.
func BlockableOutput() Option { return func(o *workerOpts) { o.blockable = true } }

// Launch starts the workers under a launch condition (chaos.Launch: their
// output on /dev/full, a restricted /proc, a pid namespace, clone3 refused).
func Launch(l chaos.Launch) Option { return func(o *workerOpts) { o.launch = l } }

// Unsafe runs the workers with --unsafe-no-step-down: the negative control,
// which keeps claiming leadership after losing it. The flag exists only in
// a binary built with -tags negativecontrol, so these workers run that
// binary (UnsafeWorkerBinary); the production binary refuses it.
func Unsafe() Option { return func(o *workerOpts) { o.unsafe = true } }

// UnsafeEarlyBreak runs the workers with --unsafe-early-break: the
// negative control of early takeover, whose followers break a leader's
// lease long before the leader has stopped (a third of its heartbeat gap
// instead of its published horizon). Like Unsafe, it needs the
// negative-control binary.
func UnsafeEarlyBreak() Option { return func(o *workerOpts) { o.earlyBreak = true } }

// Args adds raw worker flags.
func Args(args ...string) Option {
	return func(o *workerOpts) { o.args = append(o.args, args...) }
}
