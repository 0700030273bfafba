package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// autoShards is the scripted shard-mode run used by tests (demo --shards N
// --auto): wait for a balanced pool, SIGKILL the follower that owns the most
// shards, wait until live workers own each of its shards again (as their
// /status says) within L + P·1.1 + ε, wait for the balance over the workers
// left, and fail if any sweep proved a shard owned by two workers at once.
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
	fmt.Printf("killing the follower %s (shards %s) with SIGKILL\n", victim.id, shardList(d.lastOwned[victim.id]))
	gone := d.stop(victim, syscall.SIGKILL)
	if len(gone.shards) == 0 {
		fmt.Println("FAIL: the follower owned no shard at its last answer")
		return 1
	}

	// 3. Its shards owned again by live workers: the crash bound from the
	// last renew, L + P·1.1 + ε, is also a bound from the kill.
	bound := cfg.Election.LeaseDuration + cfg.Election.RetryPeriod*11/10 + 5*time.Second
	if !waitFor(ctx, "the shards of "+victim.id+" owned again by live workers", bound, func() bool {
		sw = d.sweep()
		return gone.done()
	}) {
		fmt.Print(d.shardTable(sw, false))
		return 1
	}
	var last time.Duration
	for _, n := range gone.shards {
		fmt.Printf("shard %d: %s owns it %.1fs after the kill\n", n, gone.takenBy[n], gone.after[n].Seconds())
		last = max(last, gone.after[n])
	}
	fmt.Printf("takeover: the %d shards of %s owned again by live workers %.1fs after the kill (bound %s)\n", len(gone.shards), victim.id, last.Seconds(), bound)

	// 4. Balanced over the workers left.
	if !waitFor(ctx, "a balanced pool without "+victim.id, cfg.BalanceBound()+5*time.Second, func() bool {
		sw = d.sweep()
		return d.balanced(sw)
	}) {
		fmt.Print(d.shardTable(sw, false))
		return 1
	}
	fmt.Print(d.shardTable(sw, false))
	fmt.Printf("balanced again over %d workers %.1fs after the kill\n", len(sw.answers), sw.at.Sub(gone.at).Seconds())

	// 5. What every sweep saw: no shard owned by two workers at once.
	c := d.overlaps
	fmt.Printf("overlap check: %d overlaps in %d answers (%d claims bracketed by another worker's two answers)\n", len(c.overlaps), c.answers, c.brackets)
	for _, o := range c.overlaps {
		fmt.Printf("OVERLAP: %s\n", o)
	}
	switch {
	case len(c.overlaps) > 0:
		return 1
	case c.brackets == 0:
		fmt.Println("FAIL: the overlap check compared nothing")
		return 1
	}
	return 0
}
