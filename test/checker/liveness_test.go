package checker

import (
	"fmt"
	"strings"
	"testing"
)

// failoverLine summarises a Failover for table comparison.
func failoverLine(f Failover) string {
	s := fmt.Sprintf("%s %s->%s %v/%v", f.Kind, f.Leader, f.NewLeader, f.Duration, f.Bound)
	if f.Inconclusive != "" {
		s += " inconclusive"
	}
	return s
}

// lockPath is the lock blob's URL path in the L1 table's runs.
const lockPath = "/devstoreaccount1/leases/leader"

func TestCheck_L1(t *testing.T) {
	stop := func(sec float64, id string, term int64, vu float64) []Event {
		e := ev(sec, id, EventStoppedLeading, term, vu)
		e.Reason = "renew deadline exceeded"
		return one(e)
	}
	released := func(sec float64, id string) []Event { return one(ev(sec, id, EventReleased, 0, none)) }
	crash := func(id string, sec float64) Fault { return Fault{Kind: FaultCrash, Target: id, Start: at(sec)} }
	window := func(kind, id string, from, to float64) Fault {
		f := Fault{Kind: kind, Target: id, Start: at(from)}
		if to >= 0 {
			f.End = at(to)
		}
		return f
	}
	// w1 leads from 0 and last renews at 4 (valid until 14): a crash bound
	// ends at 4 + 15 + 1.1 + 1 = 21.1.
	w1 := leads("w1", 1, 0, 4, -1)
	tests := []struct {
		name      string
		events    []Event
		faults    []Fault
		end       float64
		want      []string
		failovers []string
		granted   []GrantedRenew
	}{
		{
			// The kill lands 10 ms after the renew tick: that renew was
			// granted (the proxy saw the 200) and never logged, so the
			// lease runs until its grant + L, past the last *logged*
			// renew + L.
			name:      "crash: a renew storage granted but the killed leader never logged counts",
			events:    hist(w1, leads("w2", 2, 23.05, 30, -1)),
			faults:    []Fault{window(FaultCrash, "w1", 6.01, 10)},
			granted:   []GrantedRenew{{Slot: "w1", Path: lockPath, Arrived: at(2), Answered: at(2.003)}, {Slot: "w1", Path: lockPath, Arrived: at(5.99), Answered: at(6)}},
			failovers: []string{"crash w1->w2 17.05s/17.1s"},
		},
		{
			name:      "crash: another worker's granted renew does not move the basis",
			events:    hist(w1, leads("w2", 2, 23.05, 30, -1)),
			faults:    []Fault{window(FaultCrash, "w1", 6.01, 10)},
			granted:   []GrantedRenew{{Slot: "w2", Path: lockPath, Arrived: at(5.99), Answered: at(6)}},
			want:      []string{"L1:19.05s after last renew sent at +4.000s"},
			failovers: []string{"crash w1->w2 19.05s/17.1s"},
		},
		{
			// Shard mode: the same worker renews its shard leases through
			// the same proxy; those say nothing of the election's lease.
			name:      "crash: a granted renew of another blob (a shard's lease) does not move the basis",
			events:    hist(w1, leads("w2", 2, 23.05, 30, -1)),
			faults:    []Fault{window(FaultCrash, "w1", 6.01, 10)},
			granted:   []GrantedRenew{{Slot: "w1", Path: "/devstoreaccount1/leases/leader-shards/3", Arrived: at(5.99), Answered: at(6)}},
			want:      []string{"L1:19.05s after last renew sent at +4.000s"},
			failovers: []string{"crash w1->w2 19.05s/17.1s"},
		},
		{
			name:      "crash: a renew arriving after the restart is the next incarnation's",
			events:    hist(w1, leads("w2", 2, 23.05, 30, -1)),
			faults:    []Fault{window(FaultCrash, "w1", 6.01, 10)},
			granted:   []GrantedRenew{{Slot: "w1", Path: lockPath, Arrived: at(10.5), Answered: at(10.51)}},
			want:      []string{"L1:19.05s after last renew sent at +4.000s"},
			failovers: []string{"crash w1->w2 19.05s/17.1s"},
		},
		{
			name:      "crash: new leader exactly at the bound",
			events:    hist(w1, leads("w2", 2, 21.1, 30, -1)),
			faults:    []Fault{crash("w1", 5)},
			failovers: []string{"crash w1->w2 17.1s/17.1s"},
		},
		{
			name:      "crash: new leader 100 ms late",
			events:    hist(w1, leads("w2", 2, 21.2, 30, -1)),
			faults:    []Fault{crash("w1", 5)},
			want:      []string{"L1:17.2s after last renew sent at +4.000s"},
			failovers: []string{"crash w1->w2 17.2s/17.1s"},
		},
		{
			name: "crash: a renew logged just after the harness stamped the kill still counts",
			events: hist(leads("w1", 1, 0, 4, -1), one(ev(5.001, "w1", EventRenewed, 1, 15)),
				leads("w2", 2, 22, 30, -1)),
			faults:    []Fault{crash("w1", 5)},
			failovers: []string{"crash w1->w2 17s/17.1s"},
		},
		{
			name: "pause: a renew logged just after SIGSTOP was stamped keeps the leader valid",
			events: hist(leads("w1", 1, 0, 4, -1), one(ev(5.001, "w1", EventRenewed, 1, 15)),
				leads("w1", 1, 16, 30, -1)[1:]),
			faults: []Fault{window(FaultPause, "w1", 5, 14.5)},
		},
		{
			name:      "crash: a restarted process with the same identity counts",
			events:    hist(w1, leads("w1", 2, 20, 30, -1)),
			faults:    []Fault{crash("w1", 5)},
			failovers: []string{"crash w1->w1 16s/17.1s"},
		},
		{
			name:   "crash of a follower demands nothing",
			events: hist(leads("w1", 1, 0, 60, -1)),
			faults: []Fault{crash("w2", 5)},
		},
		{
			name:      "crash: no leader ever again",
			events:    hist(w1),
			faults:    []Fault{crash("w1", 5)},
			want:      []string{"L1:no leader by the deadline +21.100s"},
			failovers: []string{"crash w1-> 0s/17.1s"},
		},
		{
			name:      "crash: run ends before the deadline is inconclusive",
			events:    hist(w1),
			faults:    []Fault{crash("w1", 5)},
			end:       20,
			failovers: []string{"crash w1-> 0s/17.1s inconclusive"},
		},
		{
			name: "crash of an unsafe leader counts from the kill",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none)),
				leads("w2", 2, 23, 30, -1)),
			faults:    []Fault{crash("w1", 5)},
			failovers: []string{"crash w1->w2 18s/17.1s"},
			want:      []string{"L1:after fault injected"},
		},
		{
			name:      "graceful: new leader within P·1.1+ε of the release",
			events:    hist(leads("w1", 1, 0, 8, 9.5), released(9.6, "w1"), leads("w2", 2, 11.7, 30, -1)),
			faults:    []Fault{{Kind: FaultGraceful, Target: "w1", Start: at(9.4)}},
			failovers: []string{"graceful w1->w2 2.1s/2.1s"},
		},
		{
			name:      "graceful: too slow after the release",
			events:    hist(leads("w1", 1, 0, 8, 9.5), released(9.6, "w1"), leads("w2", 2, 11.8, 30, -1)),
			faults:    []Fault{{Kind: FaultGraceful, Target: "w1", Start: at(9.4)}},
			want:      []string{"L1:after released"},
			failovers: []string{"graceful w1->w2 2.2s/2.1s"},
		},
		{
			name:      "graceful without a release falls back to the crash bound",
			events:    hist(leads("w1", 1, 0, 8, 9.5), leads("w2", 2, 20, 30, -1)),
			faults:    []Fault{{Kind: FaultGraceful, Target: "w1", Start: at(9.4)}},
			failovers: []string{"graceful w1->w2 12s/17.1s"},
		},
		{
			name:   "pause shorter than the deadline demands nothing",
			events: hist(leads("w1", 1, 0, 30, -1)),
			faults: []Fault{window(FaultPause, "w1", 5, 8)},
		},
		{
			// Frozen the instant it sent its last logged renew: nothing can be
			// in flight, so the bound counts from that renew.
			name:      "pause longer than L: takeover counted from the last renew",
			events:    hist(w1, stop(25, "w1", 1, 14), leads("w2", 2, 20, 30, -1)),
			faults:    []Fault{window(FaultPause, "w1", 4, 25)},
			failovers: []string{"pause w1->w2 16s/17.1s"},
		},
		{
			name:      "pause longer than L: takeover too late",
			events:    hist(w1, stop(25, "w1", 1, 14), leads("w2", 2, 22, 30, -1)),
			faults:    []Fault{window(FaultPause, "w1", 4, 25)},
			want:      []string{"L1"},
			failovers: []string{"pause w1->w2 18s/17.1s"},
		},
		{
			// w1 logged its last renew at 4 and froze at 5.999, just before the
			// renew due at 6 — or just after sending it: that renew may have
			// been granted at storage and never logged, so the lease may run to
			// 5.999 + L. A takeover at 5.999 + L + P·1.1 is correct behaviour.
			name:      "pause with a renew maybe in flight: takeover counted from the freeze",
			events:    hist(w1, stop(25, "w1", 1, 14), leads("w2", 2, 23.099, 30, -1)),
			faults:    []Fault{window(FaultPause, "w1", 5.999, 25)},
			failovers: []string{"pause w1->w2 17.1s/17.1s"},
		},
		{
			name:      "supervisor freeze with a renew maybe in flight: counted from the freeze",
			events:    hist(w1, stop(25, "w1", 1, 14), leads("w2", 2, 23.099, 30, -1)),
			faults:    []Fault{window(FaultSupervisorFreeze, "w1", 5.999, 25)},
			failovers: []string{"supervisor_freeze w1->w2 17.1s/17.1s"},
		},
		{
			// The renew due at 6 was sent by 6 + RT = 8 at the latest; a freeze
			// later than that with no renew logged since 4 moves the basis no
			// further than 8.
			name:      "pause long after the last logged renew: basis capped at renew interval + request timeout",
			events:    hist(w1, stop(25, "w1", 1, 14), leads("w2", 2, 25.2, 30, -1)),
			faults:    []Fault{window(FaultPause, "w1", 9.5, 25)},
			want:      []string{"L1:17.2s after freeze, a renew maybe in flight at +8.000s"},
			failovers: []string{"pause w1->w2 17.2s/17.1s"},
		},
		{
			name:      "crash with a renew maybe in flight keeps the crash rule",
			events:    hist(w1, leads("w2", 2, 23.099, 30, -1)),
			faults:    []Fault{crash("w1", 5.999)},
			want:      []string{"L1"},
			failovers: []string{"crash w1->w2 19.099s/17.1s"},
		},
		{
			name: "pause: a leader that resumed and renewed the maybe-in-flight lease kept leading",
			events: hist(leads("w1", 1, 0, 4, -1), one(ev(15.5, "w1", EventRenewed, 1, 15.999)),
				one(ev(15.6, "w1", EventRenewed, 1, 25.6)), leads("w2", 2, 40, 50, -1)),
			faults: []Fault{window(FaultPause, "w1", 5.999, 15.5)},
		},
		{
			name:      "partitioned leader replaced during the partition: a leader exists at the heal",
			events:    hist(w1, stop(14, "w1", 1, 14), leads("w2", 2, 20, 40, -1)),
			faults:    []Fault{window(FaultPartition, "w1", 5, 35)},
			failovers: []string{"partition w1->w2 0s/17.1s"},
		},
		{
			name:   "partition of a follower demands nothing",
			events: hist(leads("w1", 1, 0, 60, -1)),
			faults: []Fault{window(FaultPartition, "w2", 5, 35)},
		},
		{
			name:      "outage: a leader within L+P·1.1+ε of the end",
			events:    hist(w1, stop(14, "w1", 1, 14), leads("w2", 2, 52.1, 60, -1)),
			faults:    []Fault{window(FaultOutage, "", 5, 35)},
			failovers: []string{"outage w1->w2 17.1s/17.1s"},
		},
		{
			name:      "outage: leader too late after the end",
			events:    hist(w1, stop(14, "w1", 1, 14), leads("w2", 2, 52.2, 60, -1)),
			faults:    []Fault{window(FaultOutage, AllWorkers, 5, 35)},
			want:      []string{"L1"},
			failovers: []string{"outage w1->w2 17.2s/17.1s"},
		},
		{
			name:   "outage never healed demands nothing",
			events: hist(w1, stop(14, "w1", 1, 14)),
			faults: []Fault{window(FaultOutage, "", 5, none)},
		},
		{
			name:      "latency the leader rode through",
			events:    hist(leads("w1", 1, 0, 60, -1)),
			faults:    []Fault{window(FaultLatency, "", 5, 15)},
			failovers: []string{"latency w1->w1 0s/17.1s"},
		},
		{
			name: "crash during an outage: the deadline stretches past the outage",
			events: hist(leads("w1", 1, 0, 8, -1),
				leads("w2", 2, 50, 60, -1)),
			faults:    []Fault{crash("w1", 10), window(FaultOutage, "", 9, 40)},
			failovers: []string{"outage w1->w2 10s/17.1s", "crash w1->w2 42s/17.1s"},
		},
		{
			name:      "crash overlapping a never-healed fault is inconclusive",
			events:    hist(w1),
			faults:    []Fault{crash("w1", 5), window(FaultPartition, "w3", 4.5, none)},
			failovers: []string{"crash w1-> 0s/17.1s inconclusive"},
		},
		{
			name:      "break: new leader within P·1.1+ε",
			events:    hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 12.1, 30, -1)),
			faults:    []Fault{{Kind: FaultBreak, Start: at(10)}},
			failovers: []string{"break w1->w2 2.1s/2.1s"},
		},
		{
			name:      "break: new leader too late",
			events:    hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 12.2, 30, -1)),
			faults:    []Fault{{Kind: FaultBreak, Start: at(10)}},
			want:      []string{"L1:after lease broken"},
			failovers: []string{"break w1->w2 2.2s/2.1s"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.end
			if end == 0 {
				end = 80
			}
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Start: t0, End: at(end), GrantedRenews: tc.granted, LockPath: lockPath}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
			var got []string
			for _, f := range res.Failovers {
				got = append(got, failoverLine(f))
			}
			if strings.Join(got, "\n") != strings.Join(tc.failovers, "\n") {
				t.Errorf("failovers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.failovers, "\n"))
			}
		})
	}
}

func TestCheck_FailoverFields(t *testing.T) {
	res := check(t, Run{
		Events: hist(leads("w1", 1, 0, 4, -1), leads("w2", 2, 21, 30, -1)),
		Faults: []Fault{{Kind: FaultCrash, Target: "w1", Start: at(5)}},
		Start:  t0, End: at(31),
	}, testParams())
	if len(res.Failovers) != 1 {
		t.Fatalf("expected one failover, got %+v", res.Failovers)
	}
	f := res.Failovers[0]
	if !f.Injected.Equal(at(5)) || !f.From.Equal(at(4)) || !f.To.Equal(at(21)) || !f.Deadline.Equal(at(21.1)) ||
		f.Basis != BasisLastRenew || f.Term != 1 || f.NewTerm != 2 || f.Target != "w1" {
		t.Errorf("unexpected failover %+v", f)
	}
}

func TestCheck_L2(t *testing.T) {
	tests := []struct {
		name    string
		workers []Worker
		want    []string
	}{
		{"all contending", []Worker{{"w1", true, true}, {"w2", true, true}}, nil},
		{"dead workers need not contend", []Worker{{"w1", true, true}, {"w2", false, false}}, nil},
		{"live worker gave up", []Worker{{"w1", true, true}, {"w2", true, false}}, []string{"L2:worker w2 is alive but no longer contends"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events := hist(leads("w1", 1, 0, 8, -1), one(ev(1, "w2", EventAcquireFailed, 0, none)))
			res := check(t, Run{Events: events, Workers: tc.workers, Start: t0, End: at(9)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}
