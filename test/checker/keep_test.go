package checker

import "testing"

func TestCheck_KeepTermUnderSlowStorage(t *testing.T) {
	// w1 leads term 1 from 0 s, renewing every 2 s until it stops at 12 s;
	// w2 leads term 2 from 14 s. A slow-storage fault is on w1 from 5 s.
	deposed := func(reason string) []Event {
		e := leads("w1", 1, 0, 10, -1)
		stop := ev(12, "w1", EventStoppedLeading, 1, 20)
		stop.Reason = reason
		return append(e, stop)
	}
	slow := func(kind, target string) []Fault {
		return []Fault{{Kind: kind, Target: target, Start: at(5), End: at(25)}}
	}
	renewFailed := ev(11, "w1", EventRenewFailed, 1, -1)
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
	}{
		{"deposed by its watchdog while member reads were slow", hist(deposed("watchdog: no task heartbeat for 10.001s"), leads("w2", 2, 14, 24, -1)),
			slow(FaultSlowReads, "w1"), []string{"keep:deposed from term 1 by its own watchdog"}},
		{"deposed by its watchdog under latency", hist(deposed("watchdog: no task heartbeat for 10.001s"), leads("w2", 2, 14, 24, -1)),
			slow(FaultLatency, "w1"), []string{"keep:w1"}},
		{"a renew failed: the watchdog is not alone", hist(deposed("watchdog: no task heartbeat for 10.001s"), one(renewFailed), leads("w2", 2, 14, 24, -1)),
			slow(FaultLatency, "w1"), nil},
		{"another worker slowed", hist(deposed("watchdog: no task heartbeat for 10.001s"), leads("w2", 2, 14, 24, -1)),
			slow(FaultSlowReads, "w2"), nil},
		{"stepped down for another reason", hist(deposed("task exited: ledger fenced"), leads("w2", 2, 14, 24, -1)),
			slow(FaultSlowReads, "w1"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Start: at(-1), End: at(30)}, testParams())
			var keep Result
			for _, v := range res.Violations {
				if v.Invariant == InvKeep {
					keep.Violations = append(keep.Violations, v)
				}
			}
			wantViolations(t, keep.Verdict, tc.want...)
		})
	}
}
