package checker

import (
	"testing"
	"time"
)

// fastParams is the fast profile: L 15 s, D 2 s, renew 0.5 s, P 0.5 s,
// request timeout 0.5 s, ε 1 s, T 2 s, B 3 s. The early-takeover bound is
// 2 + 3 + 2·0.55 + 5·0.5 + 1 = 9.6 s from the last renew.
func fastParams() Params {
	p := DefaultParams()
	p.RenewDeadline, p.RenewInterval, p.RetryPeriod = 2*time.Second, 500*time.Millisecond, 500*time.Millisecond // request timeout 0.5 s
	p.TakeoverAfter, p.BreakPeriod = 2*time.Second, 3*time.Second
	return p
}

// beats is a heartbeating leadership under the fast profile: renewed (with
// a heartbeat) every 0.5 s until lastRenew, valid_until = send + 2 s.
func beats(id string, term int64, from, lastRenew float64, heartbeats bool) []Event {
	out := []Event{ev(from, id, EventStartedLeading, term, from+2)}
	n := int64(0)
	for t := from + 0.5; t <= lastRenew+1e-9; t += 0.5 {
		e := ev(t, id, EventRenewed, term, t+2)
		if heartbeats {
			n++
			e.Heartbeat = n
		}
		out = append(out, e)
	}
	return out
}

func broken(sec float64, by, leader string, term, heartbeat int64, stale float64) Event {
	e := ev(sec, by, EventLeaseBroken, term, none)
	e.Leader, e.Heartbeat, e.StaleMS, e.BreakPeriodMS = leader, heartbeat, int64(stale*1000), 3000
	return e
}

func stopped(sec float64, id string, term int64, vu float64, reason string) Event {
	e := ev(sec, id, EventStoppedLeading, term, vu)
	e.Reason = reason
	return e
}

func TestCheck_EarlyTakeover(t *testing.T) {
	crash := Fault{Kind: FaultCrash, Target: "a", Start: at(10.2)}
	workers := []Worker{{Identity: "a"}, {Identity: "b", Alive: true, Contending: true}}
	for _, tc := range []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
		bound  time.Duration // of the crash's failover, when checked
		basis  string
	}{
		{
			name: "a dead leader broken after T and led after B",
			// a renews to 10.0 (heartbeat 20) and is killed at 10.2; b reads
			// heartbeat 20 first at 10.3 and finds it stale at 12.8.
			events: hist(beats("a", 1, 0, 10, true), one(broken(12.8, "b", "a", 1, 20, 2.5)), one(ev(15.9, "b", EventStartedLeading, 2, 17.9))),
			faults: []Fault{crash},
			bound:  9600 * time.Millisecond, basis: BasisLastHeartbeat,
		},
		{
			name: "a false takeover: the leader wrote a heartbeat inside the breaker's window",
			events: hist(beats("a", 1, 0, 12.5, true), one(broken(12.8, "b", "a", 1, 20, 2.5)),
				one(stopped(13.0, "a", 1, 14.5, "lease lost: renew: 409 LeaseIsBrokenAndCannotBeRenewed")), one(ev(15.9, "b", EventStartedLeading, 2, 17.9))),
			want: []string{InvTakeover + ":false takeover"},
		},
		{
			name:   "a leader before the break period passed",
			events: hist(beats("a", 1, 0, 10, true), one(broken(12.8, "b", "a", 1, 20, 2.5)), one(ev(14.0, "b", EventStartedLeading, 2, 16.0))),
			faults: []Fault{crash},
			want:   []string{InvTakeover + ":before the break"},
			bound:  9600 * time.Millisecond, basis: BasisLastHeartbeat,
		},
		{
			name:   "an operator's break inside the break period frees the lease early",
			events: hist(beats("a", 1, 0, 10, true), one(broken(12.8, "b", "a", 1, 20, 2.5)), one(ev(13.5, "b", EventStartedLeading, 2, 15.5))),
			faults: []Fault{crash, {Kind: FaultBreak, Target: "*", Start: at(13.0)}},
			bound:  9600 * time.Millisecond, basis: BasisLastHeartbeat,
		},
		{
			// Seen in the bench's fault schedule: after a 10 s outage for
			// everyone a follower broke a lease that expired 0.5 s later.
			name:   "the lease expired before the break period ended",
			events: hist(beats("a", 1, 0, 10, true), one(broken(23.5, "b", "a", 1, 20, 2.1)), one(ev(25.2, "b", EventStartedLeading, 2, 27.2))),
		},
		{
			name:   "but not before the lease's end",
			events: hist(beats("a", 1, 0, 10, true), one(broken(23.5, "b", "a", 1, 20, 2.1)), one(ev(24.8, "b", EventStartedLeading, 2, 26.8))),
			want:   []string{InvTakeover + ":before the break"},
		},
		{
			// Seen in the bench's fault schedule: a leader on a 3 s round
			// trip was broken, stepped down at its deadline and released;
			// the release landed (its answer did not come back in time, so
			// no released event) and a follower acquired before the break's end.
			name: "the holder stepped down and released before the break period ended",
			events: hist(beats("a", 1, 0, 9, true), one(broken(11.5, "b", "a", 1, 18, 2.1)),
				one(stopped(11.0, "a", 1, 11.0, "renew deadline exceeded")), one(ev(13.7, "b", EventStartedLeading, 2, 15.7))),
		},
		{
			name: "a holder that lost its lease released nothing",
			events: hist(beats("a", 1, 0, 9, true), one(broken(11.5, "b", "a", 1, 18, 2.1)),
				one(stopped(10.8, "a", 1, 11.0, "lease lost: renew: 409 LeaseIsBrokenAndCannotBeRenewed")), one(ev(13.7, "b", EventStartedLeading, 2, 15.7))),
			want: []string{InvTakeover + ":before the break"},
		},
		{
			name:   "L1: a heartbeating leader's crash is bound by the early-takeover formula",
			events: hist(beats("a", 1, 0, 10, true), one(ev(21.0, "b", EventStartedLeading, 2, 23.0))),
			faults: []Fault{crash},
			want:   []string{InvL1 + ":bound 9.6s"},
			bound:  9600 * time.Millisecond, basis: BasisLastHeartbeat,
		},
		{
			name:   "L1: a leader without heartbeats keeps the lease's bound",
			events: hist(beats("a", 1, 0, 10, false), one(ev(21.0, "b", EventStartedLeading, 2, 23.0))),
			faults: []Fault{crash},
			bound:  15*time.Second + 550*time.Millisecond + time.Second, basis: BasisLastRenew,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Workers: workers, Start: at(0), End: at(30)}, fastParams())
			wantViolations(t, res.Verdict, tc.want...)
			if tc.bound == 0 {
				return
			}
			if len(res.Failovers) == 0 {
				t.Fatal("no failover measured after the crash")
			}
			if fo := res.Failovers[0]; fo.Bound != tc.bound || fo.Basis != tc.basis {
				t.Fatalf("failover bound %v basis %q, want %v %q", fo.Bound, fo.Basis, tc.bound, tc.basis)
			}
		})
	}
}
