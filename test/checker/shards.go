package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Shard history events of a --shards worker (docs/architecture.md,
// "Shards"). Shard events carry the shard number and the shard's own term.
const (
	EventShardAcquired      = "shard_acquired"
	EventShardRenewed       = "shard_renewed"
	EventShardReleased      = "shard_released"
	EventShardLeaseReleased = "shard_lease_released"
	EventMemberJoined       = "member_joined"
	EventMemberLeft         = "member_left"
)

// Invariant names of the shard rules (Violation.Invariant).
const (
	InvShardS1 = "shard S1"   // a shard's ownership intervals never overlap
	InvShardS2 = "shard S2"   // shard terms increase; each shard's ledger is fenced and gap-free
	InvShardL1 = "shard L1"   // a shard is owned again within the failover bounds
	InvBalance = "balance"    // settled members own ⌊N/M⌋ or ⌈N/M⌉ shards
	InvSticky  = "stickiness" // a membership change moves only what balance requires; a leader change none
)

// ShardRun is a run of a --shards pool: the merged histories (election and
// shard events), the faults, and what was read back from storage.
type ShardRun struct {
	Run
	Shards  int                   // N
	Ledgers map[int][]LedgerEntry // shard → its ledger read back; a nil map skips the ledger part of shard S2
	// ShardPaths is each shard lease blob's URL path, for the crash rule's
	// granted renews (Run.GrantedRenews, Run.LockPath); nil: none count.
	ShardPaths map[int]string
}

// ShardParams are the election's parameters plus the pool's settle bound.
type ShardParams struct {
	Params
	// Settle is the stated time within which the shards are balanced again
	// after a membership change (a join, a leave, a crash) when no other
	// fault is in place. 0: DefaultSettle(Params).
	Settle time.Duration
}

// DefaultSettle is package shard's bound (shard.Config.BalanceBound) for the
// same timings: L, then a leader pass, a worker's read, the drain
// (2·(P·1.1 + request timeout)), the new owner's poll, each P·1.1 plus a
// request timeout; plus the time a member whose shard a standby took over
// receives nothing (L + P·1.1 + request timeout), since a crashed worker that
// restarts under its identity is such a member.
func DefaultSettle(p Params) time.Duration {
	p, _ = p.normalized()
	r, rt := p.retry(), p.RequestTimeout()
	settle := p.LeaseDuration + 3*r + 2*(r+rt) + 3*rt
	suspect := p.LeaseDuration + r + rt
	return settle + suspect
}

// BalanceCheck is one moment the checker judged the balance at.
type BalanceCheck struct {
	Change  time.Time      `json:"change"`  // the membership change it follows
	At      time.Time      `json:"at"`      // Change + Settle
	Members []string       `json:"members"` // live members at At
	Counts  map[string]int `json:"counts"`  // shards each owns at At
	Moves   int            `json:"moves"`   // shards that changed owner in (Change, At]
	Minimum int            `json:"minimum"` // the fewest moves balance required (-1: not judged, the pool was not settled before)
}

// ShardResult is the verdict on a shard run.
type ShardResult struct {
	Verdict                 // the shard rules' violations, shard by shard, then balance and stickiness
	PerShard map[int]Result // each shard's election-rule verdict (its intervals, failovers)
	Balance  []BalanceCheck // every moment balance and stickiness were judged
}

// CheckShards judges a shard run: the election's rules on each shard's own
// events (checkShard), a shard released on purpose owned again in time
// (checkReleases), balance and stickiness after every membership change
// (checkBalance) and no moves on a leader change alone
// (checkLeaderChanges). A shard never owned, and a run in which no moment
// could be judged for balance, are violations: no evidence is not a pass.
func CheckShards(run ShardRun, p ShardParams) (ShardResult, error) {
	pp, err := p.Params.normalized()
	if err != nil {
		return ShardResult{}, err
	}
	p.Params = pp
	if p.Settle <= 0 {
		p.Settle = DefaultSettle(pp)
	}
	if run.Shards < 1 {
		return ShardResult{}, fmt.Errorf("%w: Shards must be at least 1", ErrParams)
	}
	events := append([]Event(nil), run.Events...)
	SortEvents(events)
	run.Events = events
	start, end := run.Bounds()
	sc := &shardChecker{run: run, p: p, start: start, end: end, res: ShardResult{PerShard: map[int]Result{}}}
	for s := range run.Shards {
		sc.checkShard(s)
	}
	sc.checkBalance()
	return sc.res, nil
}

type shardChecker struct {
	run        ShardRun
	p          ShardParams
	start, end time.Time
	res        ShardResult
}

func (sc *shardChecker) report(inv string, at time.Time, workers []string, evidence []Event, format string, args ...any) {
	c := &checker{start: sc.start}
	c.report(inv, placed(at, workers...), evidence, format, args...)
	sc.res.Violations = append(sc.res.Violations, c.violations...)
}

// overrun is checker.overrun for the pool's own timing bounds.
func (sc *shardChecker) overrun(inv string, at time.Time, workers []string, b timing, evidence []Event, format string, args ...any) {
	c := &checker{start: sc.start, run: Run{Sched: sc.run.Sched}}
	c.overrun(inv, placed(at, workers...), b, evidence, format, args...)
	sc.res.Violations = append(sc.res.Violations, c.violations...)
	sc.res.Stalled = append(sc.res.Stalled, c.stalled...)
}

// asElection renames shard s's events to the election's, so the election's
// rules judge them.
func asElection(events []Event, s int) []Event {
	var out []Event
	for _, e := range events {
		if e.Shard == nil || *e.Shard != s {
			continue
		}
		switch e.Event {
		case EventShardAcquired:
			e.Event = EventStartedLeading
		case EventShardRenewed:
			e.Event = EventRenewed
		case EventShardReleased:
			e.Event = EventStoppedLeading
		case EventShardLeaseReleased:
			e.Event = EventReleased
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

var shardInv = map[string]string{InvS1: InvShardS1, InvS2: InvShardS2, InvL1: InvShardL1, InvBreak: InvShardS1}

// checkShard applies the election's rules to shard s's own events
// (shard_acquired as started_leading, shard_renewed as renewed,
// shard_released as stopped_leading, shard_lease_released as released):
// shard S1 (ownership intervals never overlap), shard S2 (shard terms
// strictly increase; the shard's ledger is fenced and gap-free) and shard L1
// (after a fault that hit its owner the shard is owned again within the
// election's L1 bound for that fault: L + P·1.1 + ε from the owner's last
// renew, P·1.1 + ε from a graceful release). Breaks act on the election's
// lock, not on shard blobs, and L2 is the election's. A shard nobody owned,
// or (with ledgers read) whose ledger is empty, is a violation.
func (sc *shardChecker) checkShard(s int) {
	// A worker contends only for the shards assigned to it: L2 is the
	// election's.
	var faults []Fault
	for _, f := range sc.run.Faults {
		if f.Kind != FaultBreak {
			faults = append(faults, f)
		}
	}
	sub := Run{Events: asElection(sc.run.Events, s), Faults: faults, Start: sc.start, End: sc.end,
		GrantedRenews: sc.run.GrantedRenews, Slots: sc.run.Slots, LockPath: sc.run.ShardPaths[s], Sched: sc.run.Sched}
	if sc.run.Ledgers != nil {
		sub.Ledger = sc.run.Ledgers[s]
	}
	r, _ := Check(sub, sc.p.Params)
	var kept []Violation
	for _, v := range r.Violations {
		inv, ok := shardInv[v.Invariant]
		if !ok {
			continue
		}
		v.Invariant = inv
		v.Message = fmt.Sprintf("shard %d: %s", s, v.Message)
		kept = append(kept, v)
	}
	r.Violations = kept
	for _, v := range r.Stalled {
		v.Invariant = shardInv[v.Invariant]
		v.Message = fmt.Sprintf("shard %d: %s", s, v.Message)
		sc.res.Stalled = append(sc.res.Stalled, v)
	}
	sc.res.PerShard[s] = r
	sc.res.Violations = append(sc.res.Violations, kept...)
	if len(r.Intervals) == 0 {
		sc.report(InvShardL1, sc.end, nil, nil, "shard %d: nobody owned it during the run (no shard_acquired): no evidence", s)
		return
	}
	if sc.run.Ledgers != nil && len(sub.Ledger) == 0 {
		sc.report(InvShardS2, sc.end, nil, nil, "shard %d: its ledger is empty: no evidence that its owners were fenced", s)
	}
	sc.checkReleases(s, sub.Events)
}

// checkReleases is shard L1 for releases on purpose (a move, a task that
// ended): the shard is owned again within P·1.1 + ε (+ ClockSkew) of its
// lease being released, since its next owner is already polling. A release
// the run ended within the bound of, one a network or storage fault
// overlaps, or one a graceful stop caused (checkShard judges that) is not
// judged here. A miss within the CPU probe's stall since the release is
// inconclusive (stall.go).
func (sc *shardChecker) checkReleases(s int, events []Event) {
	bound := sc.p.retry() + sc.p.Epsilon + sc.p.ClockSkew
	for i, e := range events {
		if e.Event != EventReleased {
			continue
		}
		deadline := e.T.Add(bound)
		if deadline.After(sc.end) || sc.faultDuring(e.T, deadline) || sc.stoppedBy(e) {
			continue // the run ended first, a fault excuses it, or L1's graceful rule judged it
		}
		var next *Event
		for j := i + 1; j < len(events); j++ {
			if events[j].Event == EventStartedLeading {
				next = &events[j]
				break
			}
		}
		if next == nil || next.T.After(deadline) {
			got, when := "never", sc.end
			ev := []Event{e}
			if next != nil {
				got, when = fmt.Sprintf("%v later by %s", next.T.Sub(e.T).Round(time.Millisecond), next.Identity), next.T
				ev = append(ev, *next)
			}
			sc.overrun(InvShardL1, deadline, []string{e.Identity}, timing{From: e.T, Due: deadline, Got: when}, ev,
				"shard %d: released by %s at %s and owned again %s; bound P·1.1 + ε = %v", s, e.Identity, sc.rel(e.T), got, bound)
		}
	}
}

// stoppedBy reports a release that a graceful stop of its worker caused
// (the per-shard L1 of the graceful fault already judges it).
func (sc *shardChecker) stoppedBy(e Event) bool {
	for _, f := range sc.run.Faults {
		if f.Kind == FaultGraceful && f.hits(e.Identity) && !f.Start.After(e.T) && e.T.Sub(f.Start) <= sc.p.LeaseDuration {
			return true
		}
	}
	return false
}

func (sc *shardChecker) rel(t time.Time) string { return (&checker{start: sc.start}).rel(t) }

// faultDuring reports a network or storage fault active in [a, b].
func (sc *shardChecker) faultDuring(a, b time.Time) bool {
	for _, f := range sc.run.Faults {
		if !windowFault(f.Kind) && !paused(f.Kind) {
			continue
		}
		end := f.End
		if end.IsZero() {
			end = sc.end
		}
		if !f.Start.After(b) && !end.Before(a) {
			return true
		}
	}
	return false
}

// handoverDuring reports a fault that hands a shard over on purpose (its
// ledger replaced: the task exits, the standby takes it) whose effects —
// the handover and the rebalancing after it, within Settle — reach [a, b].
func (sc *shardChecker) handoverDuring(a, b time.Time) bool {
	for _, f := range sc.run.Faults {
		if f.Kind != FaultLedgerBlobType {
			continue
		}
		end := f.End
		if end.IsZero() || end.Before(f.Start) {
			end = f.Start
		}
		if !f.Start.After(b) && !end.Add(sc.p.Settle).Before(a) {
			return true
		}
	}
	return false
}

// change is one membership transition.
type change struct {
	at       time.Time
	identity string
	join     bool
	ev       Event
}

// changes lists the membership transitions: member_joined / member_left
// (the first of a run of equal ones), crashes and graceful stops.
func (sc *shardChecker) changes() []change {
	var out []change
	for _, e := range sc.run.Events {
		switch e.Event {
		case EventMemberJoined:
			out = append(out, change{e.T, e.Identity, true, e})
		case EventMemberLeft:
			out = append(out, change{e.T, e.Identity, false, e})
		}
	}
	// A kill leaves no event; a graceful stop releases the shards before the
	// member lease, so its member_left comes after the moves: both count
	// from the fault.
	for _, f := range sc.run.Faults {
		if (f.Kind == FaultCrash || f.Kind == FaultGraceful) && !f.hitsAll() {
			out = append(out, change{at: f.Start, identity: f.Target})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	live := map[string]bool{}
	var kept []change
	for _, c := range out {
		if live[c.identity] == c.join {
			continue // no transition
		}
		live[c.identity] = c.join
		kept = append(kept, c)
	}
	return kept
}

// membersAt returns the live members at t (changes at or before t applied).
func membersAt(cs []change, t time.Time) []string {
	live := map[string]bool{}
	for _, c := range cs {
		if c.at.After(t) {
			break
		}
		live[c.identity] = c.join
	}
	var out []string
	for m, ok := range live {
		if ok {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// ownersAt returns each shard's owner at t ("" when none or several).
func (sc *shardChecker) ownersAt(t time.Time) ([]string, map[int][]string) {
	owners := make([]string, sc.run.Shards)
	multi := map[int][]string{}
	for s := range sc.run.Shards {
		var holders []string
		for _, iv := range sc.res.PerShard[s].Intervals {
			if !t.Before(iv.Start) && t.Before(iv.End) {
				holders = append(holders, iv.Identity)
			}
		}
		if len(holders) == 1 {
			owners[s] = holders[0]
		} else if len(holders) > 1 {
			multi[s] = holders
		}
	}
	return owners, multi
}

// movesIn counts owner changes in (a, b]: acquisitions by a different
// identity than the shard's previous owner.
func (sc *shardChecker) movesIn(a, b time.Time) int {
	k := 0
	for s := range sc.run.Shards {
		prev := ""
		for _, iv := range sc.res.PerShard[s].Intervals {
			if iv.Start.After(b) {
				break
			}
			if iv.Start.After(a) && prev != "" && iv.Identity != prev {
				k++
			}
			prev = iv.Identity
		}
	}
	return k
}

func balanced(n int, members []string, owners []string) (map[string]int, bool) {
	counts := map[string]int{}
	for _, m := range members {
		counts[m] = 0
	}
	ok := len(members) > 0
	for _, o := range owners {
		if _, member := counts[o]; !member {
			ok = false
			continue
		}
		counts[o]++
	}
	if !ok {
		return counts, false
	}
	q := n / len(members)
	for _, c := range counts {
		if c != q && c != q+1 {
			return counts, false
		}
	}
	return counts, true
}

// minimumMoves is the fewest owner changes that take owners to a balanced
// assignment over members: the ⌈N/M⌉ targets go to the members that own the
// most; every shard above a member's target, or owned by a non-member, moves.
func minimumMoves(n int, owners []string, members []string) int {
	count := map[string]int{}
	assigned := 0
	for _, o := range owners {
		if o != "" {
			count[o]++
			assigned++
		}
	}
	ms := slices.Clone(members)
	sort.SliceStable(ms, func(i, j int) bool { return count[ms[i]] > count[ms[j]] })
	q, r := n/len(ms), n%len(ms)
	keep := 0
	for i, m := range ms {
		t := q
		if i < r {
			t++
		}
		keep += min(count[m], t)
	}
	return assigned - keep
}

// checkBalance judges every membership change (changes) the run let settle
// — followed by Settle with no other change, no network or storage fault,
// and the run not over:
//
//   - balance: at Settle after it, every shard has exactly one owner and
//     every live member owns ⌊N/M⌋ or ⌈N/M⌉ shards;
//   - stickiness: when the pool was balanced just before it, the shards
//     that changed owner by Settle after it are no more than balance
//     requires (minimumMoves).
//
// A run with no such moment is a balance violation (no evidence). Settling
// takes polls and leases that each need the machine to run a worker when it
// is due: a pool unbalanced at Settle but balanced within the CPU probe's
// stall after it (with no change or fault in between) is inconclusive
// (stall.go); stickiness is judged at Settle regardless.
func (sc *shardChecker) checkBalance() {
	cs := sc.changes()
	n := sc.run.Shards
	for i, c := range cs {
		at := c.at.Add(sc.p.Settle)
		if at.After(sc.end) || (i+1 < len(cs) && !cs[i+1].at.After(at)) || sc.faultDuring(c.at, at) {
			continue
		}
		members := membersAt(cs, at)
		if len(members) == 0 {
			continue
		}
		owners, multi := sc.ownersAt(at)
		counts, ok := balanced(n, members, owners)
		bc := BalanceCheck{Change: c.at, At: at, Members: members, Counts: counts, Moves: sc.movesIn(c.at, at), Minimum: -1}
		if !ok || len(multi) > 0 {
			msg := fmt.Sprintf("%v after the membership change at %s (%s %s): members %v own %v (owners by shard %q, several owners %v); every shard needs one live owner and every member ⌊%d/%d⌋ or ⌈%d/%d⌉",
				sc.p.Settle, sc.rel(c.at), c.identity, joinWord(c.join), members, counts, owners, multi, n, len(members), n, len(members))
			if by, ok := sc.balancedBy(cs, c.at, at); ok {
				sc.overrun(InvBalance, at, members, timing{From: c.at, Due: at, Got: by}, []Event{c.ev}, "%s; balanced at %s", msg, sc.rel(by))
			} else {
				sc.report(InvBalance, at, members, []Event{c.ev}, "%s", msg)
			}
		}
		// Stickiness: judged only from a balanced pool.
		before := membersAt(cs, c.at.Add(-time.Nanosecond))
		prev, _ := sc.ownersAt(c.at.Add(-time.Nanosecond))
		if _, settled := balanced(n, before, prev); settled && len(before) > 0 {
			bc.Minimum = minimumMoves(n, prev, members)
			if bc.Moves > bc.Minimum {
				sc.report(InvSticky, at, members, []Event{c.ev}, "the membership change at %s (%s %s) moved %d shards by %s; balance required %d (owners before %q, after %q)",
					sc.rel(c.at), c.identity, joinWord(c.join), bc.Moves, sc.rel(at), bc.Minimum, prev, owners)
			}
		}
		sc.res.Balance = append(sc.res.Balance, bc)
	}
	if len(sc.res.Balance) == 0 {
		sc.report(InvBalance, sc.end, nil, nil, "no membership change was followed by %v without another change or a fault before the run ended: no evidence of balance", sc.p.Settle)
	}
	sc.checkLeaderChanges(cs)
}

// balancedBy is the moment after at, no later than at + the stall measured
// since change, when the pool was balanced again with no membership change
// or fault in between; false when it was not (a miss no stall explains).
func (sc *shardChecker) balancedBy(cs []change, change, at time.Time) (time.Time, bool) {
	stall := sc.run.Sched.StallIn(change, at)
	if stall <= 0 {
		return time.Time{}, false
	}
	late := at.Add(stall)
	for _, c := range cs {
		if c.at.After(at) && !c.at.After(late) {
			return time.Time{}, false
		}
	}
	if sc.faultDuring(at, late) || late.After(sc.end) {
		return time.Time{}, false
	}
	// The owners change only at shard events: judge at each up to late.
	moments := []time.Time{at}
	for _, e := range sc.run.Events {
		if e.Shard != nil && e.T.After(at) && !e.T.After(late) {
			moments = append(moments, e.T)
		}
	}
	members := membersAt(cs, at)
	for _, m := range moments {
		owners, multi := sc.ownersAt(m)
		if _, ok := balanced(sc.run.Shards, members, owners); ok && len(multi) == 0 {
			return m, true
		}
	}
	return time.Time{}, false
}

// checkLeaderChanges: a leader change with no membership change within
// Settle before or after it moves no shard. A shard ledger replaced by
// another blob type (FaultLedgerBlobType) hands the shard to its standby on
// purpose, and the planner rebalances after it within Settle: a leader
// change in that stretch is not judged either.
func (sc *shardChecker) checkLeaderChanges(cs []change) {
	var starts []Event
	for _, e := range sc.run.Events {
		if e.Event == EventStartedLeading && e.Shard == nil {
			starts = append(starts, e)
		}
	}
	for i, e := range starts {
		if i == 0 {
			continue // the first leader: nothing to change from
		}
		at := e.T.Add(sc.p.Settle)
		if at.After(sc.end) || sc.faultDuring(e.T, at) || sc.handoverDuring(e.T, at) {
			continue
		}
		quiet := true
		for _, c := range cs {
			if c.at.After(e.T.Add(-sc.p.Settle)) && !c.at.After(at) {
				quiet = false
			}
		}
		if !quiet {
			continue
		}
		if k := sc.movesIn(e.T, at); k > 0 {
			sc.report(InvSticky, e.T, []string{e.Identity}, []Event{e}, "the leader change to %s (term %d) at %s moved %d shards by %s with no membership change; a leader change alone moves none",
				e.Identity, e.Term, sc.rel(e.T), k, sc.rel(at))
		}
	}
}

func joinWord(join bool) string {
	if join {
		return "joined"
	}
	return "left"
}

// ShardLanes renders, for a report, who owned each shard over time: one line
// per shard, "shard 3: w1 [+0.5s, +12.0s) w2 [+12.6s, …)".
func ShardLanes(r ShardResult, start time.Time) string {
	var b strings.Builder
	keys := make([]int, 0, len(r.PerShard))
	for s := range r.PerShard {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	for _, s := range keys {
		fmt.Fprintf(&b, "shard %d:", s)
		for _, iv := range r.PerShard[s].Intervals {
			fmt.Fprintf(&b, " %s [+%.1fs, +%.1fs)", iv.Identity, iv.Start.Sub(start).Seconds(), iv.End.Sub(start).Seconds())
		}
		b.WriteString("\n")
	}
	return b.String()
}
