package checker

import (
	"testing"
	"time"
)

// fastParams is the fast profile: L 15 s, D 1.5 s, renew 0.5 s, P 0.5 s,
// request timeout 0.5 s, ε 1 s, T 2.25 s. The early-takeover bound is
// 2.25 + 0.5 + 0.55 + 9·0.5 + 1 = 8.8 s from the last belief's basis.
func fastParams() Params {
	p := DefaultParams()
	p.RenewDeadline, p.RenewInterval, p.RetryPeriod = 1500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond // request timeout 0.5 s
	p.TakeoverAfter = 2250 * time.Millisecond
	return p
}

// beats is a heartbeating leadership under the fast profile: renewed (with
// a heartbeat) every 0.5 s until lastRenew, valid_until = send + 1.5 s.
func beats(id string, term int64, from, lastRenew float64, heartbeats bool) []Event {
	out := []Event{ev(from, id, EventStartedLeading, term, from+1.5)}
	n := int64(0)
	for t := from + 0.5; t <= lastRenew+1e-9; t += 0.5 {
		e := ev(t, id, EventRenewed, term, t+1.5)
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
	e.Leader, e.Heartbeat, e.StaleMS = leader, heartbeat, int64(stale*1000)
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
	const bound = 8800 * time.Millisecond
	for _, tc := range []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
		bound  time.Duration // of the crash's failover, when checked
		basis  string
	}{
		{
			name: "a dead leader broken once its record was stale and led once it had stopped",
			// a beats to 10.0 (heartbeat 20, belief to 11.5) and is killed
			// at 10.2; b reads heartbeat 20 first at 10.3, breaks at 12.6
			// and leads at 12.7, after 11.5 + the 0.5 s request timeout.
			events: hist(beats("a", 1, 0, 10, true), one(broken(12.6, "b", "a", 1, 20, 2.25)), one(ev(12.7, "b", EventStartedLeading, 2, 14.2))),
			faults: []Fault{crash},
			bound:  bound, basis: BasisLastHeartbeat,
		},
		{
			name: "a false takeover: the leader wrote a heartbeat inside the breaker's window",
			events: hist(beats("a", 1, 0, 12.5, true), one(broken(12.8, "b", "a", 1, 20, 2.5)),
				one(stopped(13.0, "a", 1, 14.0, "lease lost: update: 412 LeaseIdMismatchWithBlobOperation")), one(ev(14.6, "b", EventStartedLeading, 2, 16.1))),
			want: []string{InvTakeover + ":false takeover"},
		},
		{
			name: "a new leader before the broken leader's in-flight request was over",
			// b waited only 1.5 s (an unsafe breaker: the negative control).
			events: hist(beats("a", 1, 0, 10, true), one(broken(11.6, "b", "a", 1, 20, 1.5)), one(ev(11.8, "b", EventStartedLeading, 2, 13.3))),
			faults: []Fault{crash},
			want:   []string{InvTakeover + ":before a had stopped"},
			bound:  bound, basis: BasisLastHeartbeat,
		},
		{
			name:   "a new leader while the broken leader still believed",
			events: hist(beats("a", 1, 0, 10, true), one(broken(10.8, "b", "a", 1, 20, 0.5)), one(ev(10.9, "b", EventStartedLeading, 2, 12.4))),
			want:   []string{InvTakeover + ":its belief ran until", InvS1},
		},
		{
			name:   "an operator's break frees the lease before the broken leader had stopped",
			events: hist(beats("a", 1, 0, 10, true), one(broken(11.6, "b", "a", 1, 20, 1.5)), one(ev(11.8, "b", EventStartedLeading, 2, 13.3))),
			faults: []Fault{crash, {Kind: FaultBreak, Target: "*", Start: at(11.7)}},
			bound:  bound, basis: BasisLastHeartbeat,
		},
		{
			// A leader on a slow link stepped down at its deadline and
			// released; the release landed (its answer did not come back in
			// time, so no released event) and a follower acquired before
			// the leader's in-flight allowance was over.
			name: "the holder stepped down and released before it had stopped",
			events: hist(beats("a", 1, 0, 9, true), one(broken(10.6, "b", "a", 1, 18, 1.5)),
				one(stopped(10.5, "a", 1, 10.5, "renew deadline exceeded")), one(ev(10.7, "b", EventStartedLeading, 2, 12.2))),
		},
		{
			name: "a holder that lost its lease released nothing",
			events: hist(beats("a", 1, 0, 9, true), one(broken(10.6, "b", "a", 1, 18, 1.5)),
				one(stopped(10.4, "a", 1, 10.5, "lease lost: renew: 409 LeaseIsBrokenAndCannotBeRenewed")), one(ev(10.7, "b", EventStartedLeading, 2, 12.2))),
			want: []string{InvTakeover + ":before a had stopped"},
		},
		{
			name:   "L1: a heartbeating leader's crash is bound by the early-takeover formula",
			events: hist(beats("a", 1, 0, 10, true), one(ev(21.0, "b", EventStartedLeading, 2, 22.5))),
			faults: []Fault{crash},
			want:   []string{InvL1 + ":bound 8.8s"},
			bound:  bound, basis: BasisLastHeartbeat,
		},
		{
			name:   "L1: a leader without heartbeats keeps the lease's bound",
			events: hist(beats("a", 1, 0, 10, false), one(ev(21.0, "b", EventStartedLeading, 2, 22.5))),
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
