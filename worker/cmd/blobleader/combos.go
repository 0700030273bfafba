package main

// Rules between flags that are each in range but cannot work together
// (docs/architecture.md#the-election). The stall watchdog steps a leader down
// when its task reports no progress (work that landed) for
// --watchdog-timeout; a task that can report less often than that, with
// every step succeeding, is deposed by its own watchdog every few seconds.

// validateTick checks --tick against the watchdog, for the worker's ledger
// task and for every shard task. Both report progress when an append lands:
// one append per tick, each bounded by two request timeouts (task.go), so
// on storage that answers just within the timeout two landed appends are up
// to --tick + 2 × request timeout apart, and a gap that long must not look
// like a stall.
func (o *options) validateTick() error {
	if o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	if gap := o.tick + 2*rt; gap >= o.watchdogTimeout {
		return usagef("invalid --tick %s with --watchdog-timeout %s: the leader task heartbeats (reports progress) once per ledger append that lands, one per tick, each up to 2 × the request timeout %s, so --tick + 2 × request timeout = %s must be less than --watchdog-timeout, or its own watchdog steps every leader down; lower --tick or raise --watchdog-timeout (0 disables it)",
			o.tick, o.watchdogTimeout, rt, gap)
	}
	return nil
}

// validateShardTimings checks what shard mode adds: the coordinator
// reports progress when a pass confirms or publishes the assignment (after
// its listing) and when it publishes the summary, one pass per jittered poll
// period (up to 1.1 × --retry-period), each storage step of a pass bounded
// by the request timeout: a steady pool reports at most 1.1 × --retry-period
// + 2 × request timeout apart.
func (o *options) validateShardTimings() error {
	if o.shards == 0 || o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	need := o.timing.RetryPeriod*11/10 + 2*rt
	if need > o.watchdogTimeout {
		return usagef("invalid --retry-period %s with --watchdog-timeout %s in shard mode: the coordinator reports progress once per pass that confirms or publishes the assignment, one pass every 1.1 × --retry-period, each step up to the request timeout (%s), so 1.1 × --retry-period + 2 × request timeout (%s) must be at most --watchdog-timeout; lower --retry-period or raise --watchdog-timeout (0 disables it)",
			o.timing.RetryPeriod, o.watchdogTimeout, rt, need)
	}
	return nil
}
