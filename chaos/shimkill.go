package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/blobleader/blobleader/worker/supervise"
)

// ShimKill SIGKILLs the command shim of a `blobleader run` supervisor alone
// (the child of the supervisor started as supervise.ShimName, the command's
// parent and the subreaper of its lineage), as an OOM kill of the small
// process or an operator's `kill -9` of the wrong pid would. The command
// dies of its parent-death signal; what it started lives on, now below the
// supervisor. With Nest, the command's other processes are first moved
// into a child cgroup of the command's cgroup (what a command that manages
// cgroups of its own does, e.g. a container runtime or systemd-run
// --scope inside it): a supervisor that reads only its cgroup's own
// cgroup.procs no longer sees them. A dead process cannot be given back,
// so Remove only forgets the fault.
type ShimKill struct {
	Process Process `json:"-"`    // the supervisor (must implement PIDProcess)
	Nest    bool    `json:"nest"` // move the command's other processes into a nested cgroup first
	// Set by Inject: the shim killed, the nested cgroup made and the pids
	// moved into it.
	Shim   int    `json:"shim_pid"`
	Nested string `json:"nested,omitempty"`
	Moved  []int  `json:"moved,omitempty"`

	state signalled
}

var (
	_ Fault         = (*ShimKill)(nil)
	_ ProcessTarget = (*ShimKill)(nil)
)

func (f *ShimKill) SetProcess(p Process) { f.Process = p }

func (f *ShimKill) Kind() Kind { return KindShimKill }

// Target is the name of the supervisor whose shim is killed.
func (f *ShimKill) Target() string { return f.state.name(f.Process) }

// Inject finds the supervisor's shim, nests its command's other processes
// (with Nest), SIGKILLs the shim and returns once it runs nothing.
func (f *ShimKill) Inject(ctx context.Context) error {
	return f.state.signalHelper(ctx, f.Process, helperSignal{
		name: supervise.ShimName, what: "kill shim", sig: syscall.SIGKILL,
		prepare: f.nest, await: awaitDeath,
	}, &f.Shim)
}

// nest moves the other processes of the shim's cgroup into a nested one
// (with Nest; nothing without) and records what it did.
func (f *ShimKill) nest(shim int) (err error) {
	if f.Nest {
		f.Nested, f.Moved, err = nestLineage(shim)
	}
	return err
}

// Remove forgets the fault (the killed shim stays dead; the nested cgroup
// is the supervisor's to clean up).
func (f *ShimKill) Remove(ctx context.Context) error {
	_ = f.state.undo(nil)
	return ctx.Err()
}

// nestLineage moves every process of the shim's cgroup but the shim and its
// children (the command) into a new cgroup below it.
func nestLineage(shim int) (string, []int, error) {
	cg, err := cgroupOf(shim)
	if err != nil {
		return "", nil, err
	}
	keep := map[int]bool{shim: true}
	for _, c := range childrenOf(shim) {
		keep[c] = true
	}
	var move []int
	for _, p := range cgroupProcs(cg) {
		if !keep[p] {
			move = append(move, p)
		}
	}
	if len(move) == 0 {
		return "", nil, fmt.Errorf("%w: cgroup %s holds no process of the command but the command itself: nothing to nest", ErrNoTarget, cg)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	nested := filepath.Join(cg, "nested-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(nested, 0o755); err != nil {
		return "", nil, fmt.Errorf("chaos: nest a cgroup in %s: %w", cg, err)
	}
	var moved []int
	for _, p := range move {
		if err := os.WriteFile(filepath.Join(nested, "cgroup.procs"), []byte(strconv.Itoa(p)), 0); err == nil {
			moved = append(moved, p)
		}
	}
	if len(moved) == 0 {
		return nested, nil, fmt.Errorf("%w: none of %v could be moved into %s", ErrNotRunning, move, nested)
	}
	return nested, moved, nil
}
