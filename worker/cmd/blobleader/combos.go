package main

// Rules between flags that are each in range but cannot work together
// (docs/architecture.md#the-election). The stall watchdog steps a leader down
// when its task shows no progress for --watchdog-timeout; a task that
// heartbeats less often than that is deposed by its own watchdog every few
// seconds, with every renew succeeding.

// validateTick checks --tick against the watchdog, for the worker's ledger
// task and for every shard task. Both heartbeat before each step, a ledger
// append bounded by two request timeouts (task.go), then wait for the next
// tick: heartbeats are at most max(--tick, 2 × request timeout) apart, and a
// gap that long must not look like a stall.
func (o *options) validateTick() error {
	if o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	if gap := max(o.tick, 2*rt); gap >= o.watchdogTimeout {
		return usagef("invalid --tick %s with --watchdog-timeout %s: the leader task heartbeats once per tick and once per ledger append (up to 2 × the request timeout %s), so max(--tick, 2 × request timeout) = %s must be less than --watchdog-timeout, or its own watchdog steps every leader down; lower --tick or raise --watchdog-timeout (0 disables it)",
			o.tick, o.watchdogTimeout, rt, gap)
	}
	return nil
}

// validateShardTimings checks what shard mode adds: the coordinator
// heartbeats once per coordination pass, one pass per jittered poll period
// (up to 1.1 × --retry-period), each storage step of a pass bounded by the
// request timeout.
func (o *options) validateShardTimings() error {
	if o.shards == 0 || o.watchdogTimeout == 0 {
		return nil
	}
	rt := o.electionConfig().RequestTimeout()
	need := o.timing.RetryPeriod*11/10 + 2*rt
	if need > o.watchdogTimeout {
		return usagef("invalid --retry-period %s with --watchdog-timeout %s in shard mode: the coordinator heartbeats once per pass, one pass every 1.1 × --retry-period, each step up to the request timeout (%s), so 1.1 × --retry-period + 2 × request timeout (%s) must be at most --watchdog-timeout; lower --retry-period or raise --watchdog-timeout (0 disables it)",
			o.timing.RetryPeriod, o.watchdogTimeout, rt, need)
	}
	return nil
}
