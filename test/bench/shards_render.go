package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blobleader/blobleader/test/cluster"
)

// shardTrials gathers the conclusive trials of a kind from the failover runs
// (the scale step's crashes too when withScale).
func (s ShardsResult) trials(kind string) (ok []ShardTrial, inconclusive int) {
	for _, r := range s.Runs {
		for _, t := range r.Trials {
			if t.Kind != kind {
				continue
			}
			if t.Note != "" || t.FromFault <= 0 {
				inconclusive++
				continue
			}
			ok = append(ok, t)
		}
	}
	return ok, inconclusive
}

func shardFromFault(ts []ShardTrial) []float64 {
	return column(ts, func(t ShardTrial) float64 { return t.FromFault })
}

func shardFromBasis(ts []ShardTrial) []float64 {
	return column(ts, func(t ShardTrial) float64 { return t.MaxFromBasis })
}

// overBound counts trials whose slowest shard took longer than its bound.
func overBound(ts []ShardTrial) (over int, bound float64) {
	for _, t := range ts {
		bound = max(bound, t.Bound)
		if t.MaxFromBasis > t.Bound {
			over++
		}
	}
	return over, bound
}

func ownedRange(ts []ShardTrial) string {
	if len(ts) == 0 {
		return "n/a"
	}
	lo, hi := ts[0].Owned, ts[0].Owned
	for _, t := range ts {
		lo, hi = min(lo, t.Owned), max(hi, t.Owned)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d – %d", lo, hi)
}

// shardsView is the shards section (shards.md.tmpl).
type shardsView struct {
	Runs  []ShardRunResult
	N, M  int            // shards and workers of the failover runs
	P     cluster.Params // the timings they ran with (§1's defaults)
	Kinds []shardKindRow
	Moves []shardMovesRow
	Cost  []shardCostView
	Scale []shardScaleView
}

// shardKindRow is the failovers after one kind of fault on a shard owner.
type shardKindRow struct {
	Label, Basis, Formula string
	FromFault, FromBasis  Stats // the fault → all owned again; the slowest shard from its basis
	Bound                 float64
	Over                  int    // trials over the bound
	Owned                 string // shards the victims owned, "lo – hi"
	Inconclusive          int
}

// shardMovesRow is the moves of one kind of membership change.
type shardMovesRow struct {
	Label          string
	Judged, Above  int    // changes judged; of them, above the minimum
	Moves, Minimum string // "lo – hi"
}

// ShardsView is the shards section, nil without the phase.
func (d *benchDoc) ShardsView() *shardsView {
	s := d.Shards
	if s == nil {
		return nil
	}
	v := &shardsView{Runs: s.Runs, P: Ours("").Params}
	if len(s.Runs) > 0 {
		v.N, v.M = s.Runs[0].Shards, s.Runs[0].Workers
	}
	for _, k := range []struct{ kind, label, basis, formula string }{
		{"crash", "crash (SIGKILL)", "the owner's last renew", "L + 1.1·P + ε"},
		{"graceful", "graceful leave (SIGTERM)", "the release", "1.1·P + ε"},
	} {
		ts, inc := s.trials(k.kind)
		over, bound := overBound(ts)
		v.Kinds = append(v.Kinds, shardKindRow{Label: k.label, Basis: k.basis, Formula: k.formula,
			FromFault: Summarize(shardFromFault(ts)), FromBasis: Summarize(shardFromBasis(ts)),
			Bound: bound, Over: over, Owned: ownedRange(ts), Inconclusive: inc})
	}
	for _, kind := range []string{"join", "crash", "graceful"} {
		v.Moves = append(v.Moves, s.moves(kind))
	}
	for _, c := range s.Cost {
		v.Cost = append(v.Cost, shardCost(c))
	}
	for _, sc := range s.Scale {
		v.Scale = append(v.Scale, shardScale(sc))
	}
	return v
}

// moves is the stickiness judgements of one kind of membership change.
func (s ShardsResult) moves(kind string) shardMovesRow {
	var mv, mn []float64
	above := 0
	for _, r := range s.Runs {
		for _, x := range r.Moves {
			if x.Kind != kind || x.Minimum < 0 {
				continue
			}
			mv = append(mv, float64(x.Moves))
			mn = append(mn, float64(x.Minimum))
			if x.Moves > x.Minimum {
				above++
			}
		}
	}
	label := map[string]string{"join": "join (the victim restarted)", "crash": "leave by crash", "graceful": "graceful leave"}[kind]
	return shardMovesRow{Label: label, Judged: len(mv), Moves: minMax(mv), Minimum: minMax(mn), Above: above}
}

// shardCostView is a shard pool's storage cost: a row per worker, the mean
// and the pool's total (nil without workers), and the ops by kind.
type shardCostView struct {
	ShardCostResult
	Rows  []shardCostRow
	Total *shardCostTotal
	Ops   []string // "op N (category)", mean per worker-hour, most first
}

type shardCostRow struct {
	RoleCost
	Owned            int
	CoordUSD, AllUSD float64 // per month: coordination ops, all ops
}

type shardCostTotal struct {
	Shards                                  int
	Coord, Task, CoordUSD, AllUSD           float64
	MeanOwned, MeanCoord, MeanTask, MeanAll float64
	MeanCoordUSD, MeanAllUSD                float64
}

func shardCost(c ShardCostResult) shardCostView {
	v := shardCostView{ShardCostResult: c}
	var coord, task, usd, usdC float64
	byOp := map[string]float64{}
	for i, x := range c.Workers {
		owned := 0
		if i < len(c.Owned) {
			owned = c.Owned[i]
		}
		u, uc := MonthlyUSD(x.ByOp, nil), MonthlyUSD(x.ByOp, IsElectionOp)
		v.Rows = append(v.Rows, shardCostRow{RoleCost: x, Owned: owned, CoordUSD: uc, AllUSD: u})
		coord, task, usd, usdC = coord+x.Election, task+x.Task, usd+u, usdC+uc
		for op, n := range x.ByOp {
			byOp[op] += n
		}
	}
	k := float64(len(c.Workers))
	if k == 0 {
		return v
	}
	v.Total = &shardCostTotal{Shards: c.Shards, Coord: coord, Task: task, CoordUSD: usdC, AllUSD: usd,
		MeanOwned: float64(c.Shards) / k, MeanCoord: coord / k, MeanTask: task / k, MeanAll: (coord + task) / k,
		MeanCoordUSD: usdC / k, MeanAllUSD: usd / k}
	ops := slices.Collect(maps.Keys(byOp))
	slices.SortFunc(ops, func(a, b string) int {
		if byOp[a] != byOp[b] {
			if byOp[a] > byOp[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, op := range ops {
		if n := byOp[op] / k; n >= 0.5 {
			v.Ops = append(v.Ops, fmt.Sprintf("%s %s (%s)", op, f0(n), Category(op)))
		}
	}
	return v
}

// shardScaleView is the scale step with its figures.
type shardScaleView struct {
	ShardScaleResult
	PerShardStats Stats   // every victim's shard: the crash → owned again
	PerCrash      string  // per conclusive crash: the fault → all owned again, "a, b, …"
	Bound         float64 // the largest slowest-shard bound
	Over          int     // crashes whose slowest shard passed it
}

func shardScale(sc ShardScaleResult) shardScaleView {
	var perCrash []float64
	for _, t := range sc.Trials {
		if t.Note == "" && t.FromFault > 0 {
			perCrash = append(perCrash, t.FromFault)
		}
	}
	over, bound := overBound(sc.Trials)
	return shardScaleView{ShardScaleResult: sc, PerShardStats: Summarize(sc.PerShard), PerCrash: joinF(perCrash), Bound: bound, Over: over}
}

func minMax(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		return f0(lo)
	}
	return f0(lo) + " – " + f0(hi)
}

func joinF(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	var parts []string
	for _, x := range xs {
		parts = append(parts, f2(x))
	}
	return strings.Join(parts, ", ")
}
