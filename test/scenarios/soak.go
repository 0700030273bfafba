package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/worker/ledger"
)

// SoakConfig is the seeded randomized soak's input.
type SoakConfig struct {
	Duration time.Duration // how long to keep injecting; the run ends after the last heal
	Seed     uint64        // the same seed gives the same sequence of faults and parameters
}

// SoakFromEnv reads $BLOBLEADER_CHAOS_DURATION (default def) and
// $BLOBLEADER_CHAOS_SEED (default: from the clock, and logged).
func SoakFromEnv(t *testing.T, def time.Duration) SoakConfig {
	t.Helper()
	cfg := SoakConfig{Duration: def, Seed: uint64(time.Now().UnixNano())}
	if v := os.Getenv(EnvDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration such as 10m", EnvDuration, v)
		}
		cfg.Duration = d
	}
	if v := os.Getenv(EnvSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", EnvSeed, v)
		}
		cfg.Seed = s
	}
	return cfg
}

// action is one step of the soak: it injects faults and returns them; the
// soak holds them for the step's duration and then heals them.
type action struct {
	name   string
	weight int
	// hold is the range the fault stays in place.
	minHold, maxHold time.Duration
	// reroll takes the faults off and puts them back every renew interval
	// while held: toxiproxy decides per connection whether a toxic bites,
	// and a client keeps a connection that survived.
	reroll bool
	do     func(s *soak) []chaos.Fault
}

type soak struct {
	t      *testing.T
	c      cluster.Cluster
	p      cluster.Params
	rng    *rand.Rand
	leader cluster.Worker // the leader before the step, nil when none was found
}

// running returns the workers whose current incarnation is alive (a soak
// that lets workers leave keeps their slots).
func (s *soak) running() []cluster.Worker {
	var out []cluster.Worker
	for _, w := range s.c.Workers() {
		if w.Running() {
			out = append(out, w)
		}
	}
	return out
}

// any picks a running worker (any slot when none runs: a restart failed,
// and the step's Inject reports it).
func (s *soak) any() cluster.Worker {
	ws := s.running()
	if len(ws) == 0 {
		ws = s.c.Workers()
	}
	return ws[s.rng.IntN(len(ws))]
}

func (s *soak) leaderOrAny() cluster.Worker {
	if s.leader != nil && s.rng.IntN(4) > 0 { // mostly the leader: that is where failovers happen
		return s.leader
	}
	return s.any()
}

func (s *soak) fraction(lo, hi float64, d time.Duration) int64 {
	return int64((lo + s.rng.Float64()*(hi-lo)) * float64(d.Milliseconds()))
}

func soakActions(p cluster.Params) []action {
	rt := p.RequestTimeout()
	grace := (p.ShutdownGrace + 10*time.Second).Milliseconds()
	return append([]action{
		{"crash", 3, 0, 20 * time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.Crash{Restart: true}, s.leaderOrAny())}
		}},
		{"graceful", 3, 0, 10 * time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.Stop{Restart: true, Grace: grace}, s.leaderOrAny())}
		}},
		{"pause", 3, 2 * time.Second, p.LeaseDuration + 10*time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.Pause{}, s.leaderOrAny())}
		}},
		{"partition", 3, 2 * time.Second, p.LeaseDuration + 10*time.Second, false, func(s *soak) []chaos.Fault {
			mode := chaos.Blackhole
			if s.rng.IntN(3) == 0 {
				mode = chaos.Refuse
			}
			return []chaos.Fault{s.bind(&chaos.Partition{Mode: mode}, s.leaderOrAny())}
		}},
		{"latency", 2, 3 * time.Second, p.LeaseDuration + 5*time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.Latency{Latency: s.fraction(0.1, 0.9, rt), Stream: chaos.Both}, s.leaderOrAny())}
		}},
		{"timeout", 1, 3 * time.Second, p.RenewDeadline + 5*time.Second, false, func(s *soak) []chaos.Fault {
			st := []chaos.Stream{chaos.Upstream, chaos.Downstream, chaos.Both}[s.rng.IntN(3)]
			return []chaos.Fault{s.bind(&chaos.Timeout{Timeout: s.fraction(0, 2, rt), Stream: st}, s.leaderOrAny())}
		}},
		{"drops", 2, 5 * time.Second, 2 * p.RenewDeadline, true, func(s *soak) []chaos.Fault {
			var fs []chaos.Fault
			for _, w := range s.running() {
				fs = append(fs,
					s.bind(&chaos.Reset{Toxicity: float32(0.1 + 0.3*s.rng.Float64()), Stream: chaos.Both}, w),
					s.bind(&chaos.Timeout{Timeout: rt.Milliseconds() / 2, Stream: chaos.Both, Toxicity: float32(0.05 + 0.15*s.rng.Float64())}, w))
			}
			return fs
		}},
		{"outage", 1, 5 * time.Second, 30 * time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.Outage{}, nil)}
		}},
		{"break", 2, 0, 0, false, func(s *soak) []chaos.Fault {
			if s.leader == nil {
				return nil // nothing to break
			}
			return []chaos.Fault{s.bind(&chaos.BreakLease{}, nil)}
		}},
		{"quiet", 1, 2 * time.Second, 8 * time.Second, false, func(s *soak) []chaos.Fault { return nil }},
		{"blocked_output", 2, 3 * time.Second, p.RenewDeadline + 5*time.Second, false, func(s *soak) []chaos.Fault {
			// stdout/stderr a full pipe nobody reads, often with storage
			// trouble on top, so the safety path runs while it is blocked
			// (docs/architecture.md#logs). Only where the cluster started
			// its workers with cluster.BlockableOutput.
			w := s.leaderOrAny()
			if b, ok := w.(interface{ OutputBlockable() bool }); !ok || !b.OutputBlockable() {
				return nil
			}
			fs := []chaos.Fault{s.bind(&chaos.BlockedOutput{}, w)}
			if s.rng.IntN(3) > 0 {
				fs = append(fs, s.bind(&chaos.Timeout{Timeout: s.fraction(0, 2, rt)}, w))
			}
			return fs
		}},
	}, append(requestAndOperatorActions(p), takeoverActions(p)...)...)
}

// takeoverActions are early takeover's faults, in the mix of a soak whose
// profile has it (TakeoverAfter > 0): the leader's host is lost while every
// follower's first break is held in flight past the break period (a late
// break), so the breaks storage receives late meet the next leadership,
// which they must leave alone (docs/failover.md#early-takeover).
func takeoverActions(p cluster.Params) []action {
	if p.TakeoverAfter == 0 {
		return nil
	}
	hold := p.TakeoverAfter + 2*p.BreakPeriod + 2*time.Second
	return []action{
		{"late_break", 2, hold, hold, false, func(s *soak) []chaos.Fault {
			if s.leader == nil {
				return nil // nobody to lose, nothing to break
			}
			delay := p.BreakPeriod + time.Duration(1000+s.rng.IntN(3000))*time.Millisecond
			var fs []chaos.Fault
			for _, w := range s.running() {
				if w.Identity() != s.leader.Identity() {
					fs = append(fs, s.bind(&chaos.LateBreak{Delay: delay.Milliseconds(), Count: 1}, w))
				}
			}
			return append(fs, s.bind(&chaos.Crash{Restart: true}, s.leader))
		}},
	}
}

// requestAndOperatorActions are the request-level and operator fault
// classes in the soak's mix: requests held past the client's timeout and
// delivered later (with LateReleaseFromEndedLeadership's late release when
// renews are held), answers lost after
// storage applied the request (one answer each, as the checker's bound
// assumes), and an operator deleting the lock blob or its container.
func requestAndOperatorActions(p cluster.Params) []action {
	rt := p.RequestTimeout()
	return []action{
		{"late", 2, 3 * time.Second, p.RenewDeadline + 5*time.Second, false, func(s *soak) []chaos.Fault {
			w := s.leaderOrAny()
			op := []chaos.Op{chaos.OpRenew, chaos.OpRelease, chaos.OpAcquire, chaos.OpMetadata}[s.rng.IntN(4)]
			if op != chaos.OpRenew {
				return []chaos.Fault{s.bind(&chaos.LateDelivery{Op: op, Delay: s.fraction(1.1, 3, rt), Count: 1}, w)}
			}
			release := rt + 2*p.RetryPeriod*11/10 + time.Duration(s.rng.IntN(4000))*time.Millisecond
			return []chaos.Fault{
				s.bind(&chaos.LateDelivery{Op: chaos.OpRenew, Delay: s.fraction(1.1, 2, rt)}, w),
				s.bind(&chaos.LateDelivery{Op: chaos.OpRelease, Delay: release.Milliseconds(), Count: 1}, w),
			}
		}},
		{"lost", 2, 2 * time.Second, 8 * time.Second, false, func(s *soak) []chaos.Fault {
			f := &chaos.LostResponse{Count: 1}
			switch s.rng.IntN(4) {
			case 0:
				f.Op, f.Status = chaos.OpAcquire, http.StatusCreated
			case 1:
				f.Op = chaos.OpMetadata
			case 2:
				f.Op = chaos.OpRenew
			default:
				f.Op = chaos.OpRelease
			}
			return []chaos.Fault{s.bind(f, s.any())}
		}},
		{"delete_blob", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			if s.leader == nil {
				return nil // nothing there to delete
			}
			return []chaos.Fault{s.bind(&chaos.DeleteBlob{}, nil)}
		}},
		{"delete_container", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			if s.leader == nil {
				return nil
			}
			return []chaos.Fault{s.bind(&chaos.DeleteContainer{}, nil)}
		}},
	}
}

// operatorActions are the operator's hand-written metadata in the election
// soak's mix: a typo'd term no contender can stamp a next term on, repaired
// (the record put back) when the step heals it. The fleet must say so and
// leave the record alone; the checker counts L1 from the repair.
//
// metadata_rollback is not in the mix: it rewinds the ledger too, while the
// running workers keep appending, so the ledger the checker judges every
// other step by (S2, entries from seq 1 on) would lose its earlier entries
// for the rest of the soak; TestElection_RollbackNeverStartsATermTwice covers it.
func operatorActions() []action {
	return []action{
		{"operator_metadata", 1, 2 * time.Second, 10 * time.Second, false, func(s *soak) []chaos.Fault {
			typo := []string{"1795400000000x", "17954OOOOOOOO", "1795400000000 1"}[s.rng.IntN(3)]
			return []chaos.Fault{s.bind(&chaos.OperatorMetadata{Term: typo}, nil)}
		}},
	}
}

// ledgerActions are the operator's edits to the ledger in the election
// soak's mix: the last segment re-uploaded as a block blob with the same
// lines (`az storage blob upload`'s default). The leader hands on and the
// next one seals it and continues; the checker's S2 judges the ledger as
// read back. (A segment that is not a ledger at all, and a ledger term
// above the lock's, which stops every leader until an operator repairs it:
// TestElection_LedgerPoisonedIsRepairedOrLoud, not the mix, whose other
// faults' L1 bounds assume contenders that poll.)
func ledgerActions() []action {
	return []action{
		{"ledger_blob_type", 1, 0, 0, false, func(s *soak) []chaos.Fault {
			if s.leader == nil || !hasSegments(s, s.c.LockBlob()) {
				return nil // no ledger to edit yet
			}
			return []chaos.Fault{s.bind(&chaos.LedgerBlobType{Ledger: s.c.LockBlob()}, nil)}
		}},
	}
}

// hasSegments reports whether the ledger named blob has a segment.
func hasSegments(s *soak, blob string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	segs, err := ledger.ListSegments(ctx, s.c.Storage(), blob)
	return err == nil && len(segs) > 0
}

// bound is a fault with the worker it is for, until the soak injects it.
type boundFault struct {
	chaos.Fault
	w cluster.Worker
}

func (s *soak) bind(f chaos.Fault, w cluster.Worker) chaos.Fault { return boundFault{f, w} }

// Soak runs randomized faults, one step at a time, for cfg.Duration, then
// judges the whole run. Each step injects, holds, heals and waits (without
// failing) for a leader; the checker decides whether the waits were short
// enough. It returns the summary.
func Soak(t *testing.T, c cluster.Cluster, cfg SoakConfig, name string, extra ...action) (report.Summary, checker.Result) {
	t.Helper()
	steps := soakSteps(t, c, cfg, append(soakActions(c.Params()), extra...), nil)
	// A soak that never had a leader before its first fault, or injected
	// nothing, has shown nothing.
	run, res := JudgeRequiring(t, c, name, checker.Requirements{LeadershipsBeforeFault: 1})
	sum := report.Summarize(run, res)
	text := SummaryText(sum) + withStorageProbe(c)
	t.Logf("soak steps: %v", steps)
	t.Log("soak summary:\n" + text)
	writeSoakSummary(t, name, cfg, steps, text)
	return sum, res
}

// withStorageProbe is the storage probe's summary line for a soak's
// summary (with its newline), "" for a backend without a probe: whether
// storage itself stalled during the soak, in the lines `make chaos` prints.
func withStorageProbe(c cluster.Cluster) string {
	if line := storageProbeLine(c); line != "" {
		return line + "\n"
	}
	return ""
}

// writeSoakSummary writes <name>.txt to $BLOBLEADER_CHAOS_OUT, which `make
// chaos` prints at the end.
func writeSoakSummary(t *testing.T, name string, cfg SoakConfig, steps map[string]int, text string) {
	t.Helper()
	if d := os.Getenv(EnvOut); d != "" {
		if err := os.WriteFile(d+"/"+name+".txt", []byte(fmt.Sprintf("seed %d, duration %v, steps %v\n%s", cfg.Seed, cfg.Duration, steps, text)), 0o644); err != nil {
			t.Errorf("write summary: %v", err)
		}
	}
}

// soakSteps runs the seeded steps drawn from actions until cfg.Duration has
// passed and returns how many of each it ran. before, when not nil, runs
// before each step is drawn (after the leader is looked up).
func soakSteps(t *testing.T, c cluster.Cluster, cfg SoakConfig, actions []action, before func(s *soak)) map[string]int {
	t.Helper()
	t.Logf("soak: %v, seed %d (rerun with %s=%d)", cfg.Duration, cfg.Seed, EnvSeed, cfg.Seed)
	s := &soak{t: t, c: c, p: c.Params(), rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	total := 0
	for _, a := range actions {
		total += a.weight
	}
	end := time.Now().Add(cfg.Duration)
	steps := map[string]int{}
	for i := 1; time.Now().Before(end); i++ {
		if before != nil {
			before(s)
		}
		s.leader, _ = c.FindLeader(takeover(s.p))
		// A worker faulted before its first poll leaves no history, which the
		// checker rightly fails (seen in CI: w1 crashed by step 1). Wait, without
		// failing, for every running worker to name a leader.
		if waiting := awaitEveryoneSawALeader(c, takeover(s.p)); len(waiting) > 0 {
			t.Logf("soak step %d: %v name no leader after %v; going on", i, waiting, takeover(s.p))
		}
		pick := s.rng.IntN(total)
		var a action
		for _, a = range actions {
			if pick < a.weight {
				break
			}
			pick -= a.weight
		}
		holdFor := a.minHold
		if a.maxHold > a.minHold {
			holdFor += time.Duration(s.rng.Int64N(int64(a.maxHold - a.minHold)))
		}
		faults := a.do(s)
		var in []boundFault
		for _, f := range faults {
			bf := f.(boundFault)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := c.Inject(ctx, bf.Fault, bf.w)
			cancel()
			if err != nil {
				t.Errorf("soak step %d (%s): %v", i, a.name, err)
				continue
			}
			in = append(in, bf)
		}
		steps[a.name]++
		t.Logf("soak step %d: %s, held %v", i, a.name, holdFor.Round(time.Millisecond))
		if a.reroll {
			var rs []chaos.Rerollable
			for _, f := range in {
				if r, ok := f.Fault.(chaos.Rerollable); ok {
					rs = append(rs, r)
				}
			}
			reroll(t, rs, holdFor, s.p.RenewInterval)
		} else {
			hold(t, holdFor)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for j := len(in) - 1; j >= 0; j-- {
			if err := c.Remove(ctx, in[j].Fault); err != nil {
				t.Errorf("soak step %d (%s): %v", i, a.name, err)
			}
		}
		cancel()
		if _, err := c.FindLeader(takeover(s.p)); err != nil {
			t.Logf("soak step %d (%s): no single leader after healing: %v", i, a.name, err)
		}
		hold(t, time.Duration(500+s.rng.IntN(2500))*time.Millisecond) // gap between steps
	}
	return steps
}

// SummaryText renders the figures the issue asks of a soak: faults by kind,
// violations, failover p50/p99/max per kind.
func SummaryText(s report.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "duration %.0f s, %d faults, %d violations, %d terms, %d ledger entries, leaderless %.1f s (longest %.1f s)\n",
		s.DurationSeconds, s.Faults, s.Violations, s.Terms, s.LedgerEntries, s.LeaderlessS, s.LongestGapS)
	kinds := make([]string, 0, len(s.FaultsByKind))
	for k := range s.FaultsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "%-16s %6s %9s %8s %8s %8s %9s %6s\n", "kind", "faults", "failovers", "p50 s", "p99 s", "max s", "bound s", "over")
	for _, k := range kinds {
		st := s.FailoversByKind[k]
		fmt.Fprintf(&b, "%-16s %6d %9d %8.2f %8.2f %8.2f %9.2f %6d\n", k, s.FaultsByKind[k], st.Count, st.P50, st.P99, st.Max, st.MaxBound, st.Exceeded)
	}
	for inv, n := range s.ByInvariant {
		fmt.Fprintf(&b, "violations %s: %d\n", inv, n)
	}
	for _, v := range s.ViolationList {
		fmt.Fprintf(&b, "- %s: %s\n", v.Invariant, v.Message)
	}
	return b.String()
}
