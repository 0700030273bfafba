package bench

import (
	"fmt"
	"slices"
	"strings"
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

// renderShards writes the shards section.
func renderShards(w func(string, ...any), r Results) {
	s := r.Shards
	if s == nil {
		return
	}
	ours := Ours("")
	p := ours.Params
	w("## 9. Shards: failover, moves, cost and scale (issue 13)\n\n")
	if len(s.Runs) > 0 {
		n, m := s.Runs[0].Shards, s.Runs[0].Workers
		w("`blobleader --shards %d`, %d workers at the defaults of §1 (L %v, renew %v, P %v). Each trial waits for balance, then SIGKILLs (crash) or SIGTERMs (graceful) a random worker that owns shards and is not the election's leader, at 1 s + U(0, renew interval); waits until the others own every shard and the checker's settle bound has passed (so the leave's moves are judged), restarts the victim and waits the settle bound again (so the join's moves are judged). *Fault → all owned again* is the fault until the last of the victim's shards is acquired by another worker (`shard_acquired`), from the shard intervals of `checker.CheckShards`; *slowest shard from its basis* is the slowest of them counted as per-shard L1 counts (crash: from the owner's last renew; graceful: from its release), beside that bound.\n\n", n, m, p.LeaseDuration, p.RenewInterval, p.RetryPeriod)
		w("| | p50 (s) | p99 (s) | max (s) | spread | bound |\n|---|---|---|---|---|---|\n")
		for _, k := range []struct{ kind, label, basis, formula string }{
			{"crash", "crash (SIGKILL)", "the owner's last renew", "L + 1.1·P + ε"},
			{"graceful", "graceful leave (SIGTERM)", "the release", "1.1·P + ε"},
		} {
			ts, inc := s.trials(k.kind)
			over, bound := overBound(ts)
			w("| %s: fault → all the victim's shards owned again | %s | |\n", k.label, statsCells(Summarize(shardFromFault(ts)), f2))
			w("| %s: slowest shard from %s | %s | %s = %s s; over it: %d of %d |\n", k.label, k.basis, statsCells(Summarize(shardFromBasis(ts)), f2), k.formula, f2(bound), over, len(ts))
			w("| %s: shards the victim owned; inconclusive trials | %s; %d | |\n", k.label, ownedRange(ts), inc)
		}
		w("\n")
		w("**Moves per membership change** against the minimum balance requires (`checker.CheckShards`' stickiness moments: moves = shards whose owner changed within the settle bound of the change; minimum = the fewest owner changes that reach ⌊N/M⌋ or ⌈N/M⌉ from the owners just before it):\n\n")
		w("| change | judged | moves (min – max) | minimum (min – max) | above the minimum |\n|---|---|---|---|---|\n")
		for _, kind := range []string{"join", "crash", "graceful"} {
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
			w("| %s | %d | %s | %s | %d |\n", label, len(mv), minMax(mv), minMax(mn), above)
		}
		w("\n")
		for _, r := range s.Runs {
			w("- %s: %d trials over %s s, checker verdicts (Check and CheckShards): %s", r.Job, len(r.Trials), f0(r.Seconds), violationText(r.Violations))
			if len(r.Examples) > 0 {
				w(" (e.g. %s)", strings.Join(r.Examples, "; "))
			}
			w("\n")
		}
		w("\n")
	}
	for _, c := range s.Cost {
		renderShardCost(w, c)
	}
	for _, sc := range s.Scale {
		ps := Summarize(sc.PerShard)
		var trialMax []float64
		for _, t := range sc.Trials {
			if t.Note == "" && t.FromFault > 0 {
				trialMax = append(trialMax, t.FromFault)
			}
		}
		over, bound := overBound(sc.Trials)
		w("**Scale: %d shards over %d workers on one Azurite** (every worker and the Azurite on this machine):\n\n", sc.Shards, sc.Workers)
		w("| | |\n|---|---|\n")
		w("| time to balance (the last worker started → every shard owned once, ⌊N/M⌋ or ⌈N/M⌉ each, by /status) | %s s |\n", f1(sc.BalanceS))
		w("| crash failover per shard, fault → owned again: p50 / p99 / max | %s / %s / %s s (n %d shards over %d crashes) |\n", f2(ps.P50), f2(ps.P99), f2(ps.Max), ps.N, len(sc.Trials))
		w("| crash: fault → all the victim's shards owned again, per crash | %s s |\n", joinF(trialMax))
		w("| crash: slowest shard from the owner's last renew over L + 1.1·P + ε = %s s | %d of %d crashes |\n", f2(bound), over, len(sc.Trials))
		w("| storage requests, all workers, steady %s s window | %s /s |\n", f0(sc.WindowS), f0(sc.RequestPS))
		w("| storage request latency p50 / p99 (upper bound of the histogram bucket holding it) | ≤ %s / ≤ %s s |\n", fmt.Sprint(sc.P50), fmt.Sprint(sc.P99))
		for _, rb := range sc.Rebalance {
			w("| %s |  |\n", rb)
		}
		w("| checker verdicts (Check and CheckShards) | %s |\n", violationText(sc.Violations))
		for _, e := range sc.Examples {
			w("| e.g. | %s |\n", strings.ReplaceAll(e, "|", "/"))
		}
		if sc.Err != "" {
			w("| error (the run stopped here; the rows above are what it measured before) | %s |\n", strings.ReplaceAll(sc.Err, "\n", " "))
		}
		w("\n")
	}
}

func renderShardCost(w func(string, ...any), c ShardCostResult) {
	w("**Storage operations per worker-hour** at N = %d, M = %d, steady state (balanced, standbys polling), counted from each worker's `blobleader_storage_requests_total` over %s s. *Coordination* is every op but the shards' ledgers and the history (membership, assignment, the election's and every shard's lease); *task* is the reference task's ledger appends per shard and the history. Monthly at %s h and the sample prices of §4 (an estimate; see §4 for the source).\n\n", c.Shards, len(c.Workers), f0(c.WindowS), f0(Price.HoursPerMonth))
	w("| worker | role | shards owned | coordination ops/h | task ops/h | total ops/h | $/month (coordination) | $/month (all) |\n|---|---|---|---|---|---|---|---|\n")
	var coord, task, usd, usdC float64
	byOp := map[string]float64{}
	for i, x := range c.Workers {
		owned := 0
		if i < len(c.Owned) {
			owned = c.Owned[i]
		}
		u, uc := MonthlyUSD(x.ByOp, nil), MonthlyUSD(x.ByOp, IsElectionOp)
		w("| %s | %s | %d | %s | %s | %s | %s | %s |\n", x.Identity, x.Role, owned, f0(x.Election), f0(x.Task), f0(x.Election+x.Task), f2(uc), f2(u))
		coord, task, usd, usdC = coord+x.Election, task+x.Task, usd+u, usdC+uc
		for op, v := range x.ByOp {
			byOp[op] += v
		}
	}
	k := float64(len(c.Workers))
	if k == 0 {
		return
	}
	w("| **mean per worker** | | %s | %s | %s | %s | %s | %s |\n", f1(float64(c.Shards)/k), f0(coord/k), f0(task/k), f0((coord+task)/k), f2(usdC/k), f2(usd/k))
	w("| **the pool** | | %d | %s | %s | %s | %s | %s |\n\n", c.Shards, f0(coord), f0(task), f0(coord+task), f2(usdC), f2(usd))
	ops := make([]string, 0, len(byOp))
	for op := range byOp {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int {
		if byOp[a] != byOp[b] {
			if byOp[a] > byOp[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, op := range ops {
		if v := byOp[op] / k; v >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", op, f0(v), Category(op)))
		}
	}
	w("Per op, mean per worker-hour (billing category): %s.\n\n", strings.Join(parts, ", "))
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
