package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// autoShards is the scripted shard-mode run used by tests (demo --shards N
// --auto): wait for a balanced pool, SIGKILL (--fault pause: SIGSTOP) the
// follower that owns the most shards, wait until live workers own each of
// its shards again (as their /status says) within L + P·1.1 + ε, wait for
// the balance over the workers left (pause: SIGCONT it first, and the pool
// balanced with it back), and fail if any sweep proved a shard owned by two
// workers at once.
func (d *demo) autoShards(ctx context.Context) int {
	cfg := shardTimings
	var sw sweep
	var steadySince time.Time
	var steadyVersion int64
	// 1. Balanced, every shard with a standby, and the same assignment for a
	// view TTL: every worker has read it, so each standby knows it is one.
	if !waitFor(ctx, "a balanced pool with a standby for every shard, steady for the view TTL", cfg.BalanceBound()+30*time.Second, func() bool {
		sw = d.sweep()
		if !d.balanced(sw) {
			steadySince = time.Time{}
			return false
		}
		if steadySince.IsZero() || sw.assignment.Version != steadyVersion {
			steadySince, steadyVersion = sw.at, sw.assignment.Version
		}
		return sw.at.Sub(steadySince) >= cfg.ViewTTL()
	}) {
		fmt.Print(d.shardTable(sw, false))
		return 1
	}
	fmt.Print(d.shardTable(sw, false))

	// 2. Kill the follower with the most shards.
	var victim *worker
	for _, w := range d.workers {
		s, ok := sw.answers[w.id]
		if ok && s.Role != "leader" && (victim == nil || len(s.Shards) > len(sw.answers[victim.id].Shards)) {
			victim = w
		}
	}
	if victim == nil {
		fmt.Println("FAIL: no follower to kill")
		return 1
	}
	var gone *departure
	if d.fault == "pause" {
		fmt.Printf("pausing the follower %s (shards %s) with SIGSTOP\n", victim.id, shardList(d.lastOwned[victim.id]))
		gone = d.pause(victim)
	} else {
		fmt.Printf("killing the follower %s (shards %s) with SIGKILL\n", victim.id, shardList(d.lastOwned[victim.id]))
		gone = d.stop(victim, syscall.SIGKILL)
	}
	if len(gone.shards) == 0 {
		fmt.Println("FAIL: the follower owned no shard at its last answer")
		return 1
	}
	// From here every exit reports what the overlap check saw.
	fail := func() int { d.reportOverlaps(); return 1 }

	// 3. Its shards owned again by live workers: the crash bound from the
	// last renew, L + P·1.1 + ε, is also a bound from the kill.
	bound := cfg.Election.LeaseDuration + cfg.Election.RetryPeriod*11/10 + 5*time.Second
	if !waitFor(ctx, "the shards of "+victim.id+" owned again by live workers", bound, func() bool {
		sw = d.sweep()
		return gone.done()
	}) {
		fmt.Print(d.shardTable(sw, false))
		return fail()
	}
	var last time.Duration
	for _, n := range gone.shards {
		fmt.Printf("shard %d: %s owns it %.1fs after the %s\n", n, gone.takenBy[n], gone.after[n].Seconds(), d.fault)
		last = max(last, gone.after[n])
	}
	fmt.Printf("takeover: the %d shards of %s owned again by live workers %.1fs after the %s (bound %s)\n", len(gone.shards), victim.id, last.Seconds(), d.fault, bound)

	// 4. Balanced again: over the workers left, or with the paused one
	// back (woken, it must find its leases gone and claim nothing).
	without := " without " + victim.id
	if d.fault == "pause" {
		d.resume(victim)
		fmt.Printf("resumed %s with SIGCONT\n", victim.id)
		without = " with " + victim.id + " back"
	}
	if !waitFor(ctx, "a balanced pool"+without, cfg.BalanceBound()+5*time.Second, func() bool {
		sw = d.sweep()
		return d.balanced(sw)
	}) {
		fmt.Print(d.shardTable(sw, false))
		return fail()
	}
	fmt.Print(d.shardTable(sw, false))
	fmt.Printf("balanced again over %d workers %.1fs after the %s\n", len(sw.answers), sw.at.Sub(gone.at).Seconds(), d.fault)
	if !d.reportOverlaps() {
		return 1
	}
	return 0
}

// reportOverlaps prints what every sweep saw and reports whether it proves
// no shard owned by two workers at once (an overlap, or no bracketed claim
// compared at all, is a failure).
func (d *demo) reportOverlaps() bool {
	c := d.overlaps
	fmt.Printf("overlap check: %d overlaps in %d answers (%d claims bracketed by another worker's two answers)\n", len(c.overlaps), c.answers, c.brackets)
	for _, o := range c.distinct {
		fmt.Printf("OVERLAP: %s (proved %d times)\n", o, c.Times(o))
	}
	switch {
	case len(c.overlaps) > 0:
		return false
	case c.brackets == 0:
		fmt.Println("FAIL: the overlap check compared nothing")
		return false
	}
	return true
}
