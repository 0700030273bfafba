package checker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blobleader/blobleader/worker/history"
)

func TestCheck_WorkerWithoutHistory(t *testing.T) {
	events := hist(leads("w1", 1, 0, 8, -1), one(ev(1, "w2", EventObservedLeader, 1, none)))
	tests := []struct {
		name    string
		workers []Worker
		want    []string
	}{
		{
			name:    "every started worker logged",
			workers: []Worker{{"w1", true, true}, {"w2", true, true}},
		},
		{
			name:    "a started worker left no history",
			workers: []Worker{{"w1", true, true}, {"w2", true, true}, {"w3", true, true}},
			want:    []string{"evidence:worker w3 was started but left no history"},
		},
		{
			name:    "a dead worker without history is still a failure",
			workers: []Worker{{"w1", true, true}, {"w3.1", false, false}},
			want:    []string{"evidence:worker w3.1 was started"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: events, Workers: tc.workers, Start: t0, End: at(9)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
			if len(tc.want) > 0 && (res.OK() || res.Outcome() != VerdictFail || !errors.Is(res.Err(), ErrViolations)) {
				t.Errorf("verdict %s, err %v; want fail", res.Outcome(), res.Err())
			}
		})
	}
}

func TestCheck_Requirements(t *testing.T) {
	// w1 leads, is killed at 9 after its last renew at 8 (valid until 18);
	// w2 takes over at 20 (bound: 8 − 10 + 10 + 17.1 = 25.1).
	crashed := hist(leads("w1", 1, 0, 8, -1), leads("w2", 2, 20, 30, -1))
	crash := Fault{Kind: FaultCrash, Target: "w1", Start: at(9)}
	ledger := []LedgerEntry{{Seq: 1, Term: 1, Holder: "w1", At: at(1)}}
	full := Requirements{LeadershipsBeforeFault: 1, HitLeader: []string{FaultCrash}, Failovers: 1, LeadershipsAfterFault: 1, LedgerEntries: 1}
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		req    Requirements
		end    float64 // run end; 0: 31
		want   []string
	}{
		{name: "all met", events: crashed, faults: []Fault{crash}, req: full},
		{name: "nothing required, nothing injected", events: crashed},
		{
			name:   "no fault injected",
			events: crashed,
			req:    Requirements{LeadershipsBeforeFault: 1, HitLeader: []string{FaultCrash}, LeadershipsAfterFault: 1},
			want: []string{"evidence:before its first fault, but no fault was injected", "evidence:no crash fault was injected",
				"evidence:after its last fault, but no fault was injected"},
		},
		{
			name:   "the fault came before any leadership",
			events: hist(leads("w2", 2, 20, 30, -1)),
			faults: []Fault{{Kind: FaultCrash, Target: "w1", Start: at(9)}},
			req:    Requirements{LeadershipsBeforeFault: 1},
			want: []string{"evidence:requires 1 leadership(s) before its first fault (+9.000s (07:00:09.000000)); the history has 0",
				"S2:term 1 was never started"}, // the ledger's entry
		},
		{
			name:   "the fault hit a follower",
			events: crashed,
			faults: []Fault{{Kind: FaultCrash, Target: "w3", Start: at(9)}},
			req:    Requirements{HitLeader: []string{FaultCrash}, Failovers: 1},
			want:   []string{"evidence:none hit a worker that believed it led", "evidence:requires 1 measured failover(s); the run has 0"},
		},
		{
			name:   "a fault on every worker hits whoever leads",
			events: crashed,
			faults: []Fault{{Kind: FaultDeleteContainer, Target: AllWorkers, Start: at(5)}},
			req:    Requirements{HitLeader: []string{FaultDeleteContainer}},
			want:   []string{"break:after fault delete_container", "L1"}, // w1 kept believing; w2 came late
		},
		{
			name:   "the failover is still open at run end",
			events: hist(leads("w1", 1, 0, 8, -1)),
			faults: []Fault{crash},
			req:    Requirements{Failovers: 1, LeadershipsAfterFault: 1},
			end:    20, // before the deadline 25.1: L1 cannot tell, the evidence rule can
			want:   []string{"evidence:requires 1 measured failover(s)", "evidence:requires 1 leadership(s) after its last fault"},
		},
		{
			name:   "no ledger read back",
			events: crashed,
			faults: []Fault{crash},
			req:    Requirements{LedgerEntries: 3},
			want:   []string{"evidence:requires 3 ledger entries; 1 were read back"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.end
			if end == 0 {
				end = 31
			}
			run := Run{Events: tc.events, Faults: tc.faults, Ledger: ledger, Requires: tc.req, Start: t0, End: at(end)}
			res := check(t, run, testParams())
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
	if s := full.String(); !strings.Contains(s, "≥1 failover(s) measured") || !strings.Contains(s, "crash hit the leader") {
		t.Errorf("Requirements.String() = %q", s)
	}
}

func TestCheck_DroppedRecordsAreInconclusive(t *testing.T) {
	dropped := ev(15, "w1", EventHistoryDropped, 0, none)
	dropped.Dropped = 42
	clean := hist(leads("w1", 1, 0, 8, 10), leads("w2", 2, 11, 30, -1))
	tests := []struct {
		name    string
		events  []Event
		verdict string
		want    []string
	}{
		{name: "complete history passes", events: clean, verdict: VerdictPass},
		{name: "dropped records: inconclusive, not pass", events: hist(clean, one(dropped)), verdict: VerdictInconclusive},
		{
			name:    "dropped records and a violation: fail",
			events:  hist(leads("w1", 1, 0, 8, 12), leads("w2", 2, 11, 30, -1), one(dropped)),
			verdict: VerdictFail,
			want:    []string{"S1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Start: t0, End: at(31)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
			if got := res.Outcome(); got != tc.verdict {
				t.Fatalf("verdict %s, want %s (inconclusive: %v)", got, tc.verdict, res.Inconclusive)
			}
			err := res.Err()
			switch tc.verdict {
			case VerdictPass:
				if err != nil || !res.OK() {
					t.Fatalf("a clean run: OK %v, err %v", res.OK(), err)
				}
			case VerdictInconclusive:
				if res.OK() || !errors.Is(err, ErrInconclusive) || errors.Is(err, ErrViolations) {
					t.Fatalf("OK %v, err %v; want not OK and ErrInconclusive", res.OK(), err)
				}
				if !strings.Contains(err.Error(), "worker w1's history lost 42 record(s)") {
					t.Errorf("the reason does not say whose records and how many: %v", err)
				}
			case VerdictFail:
				if !errors.Is(err, ErrViolations) || !strings.Contains(err.Error(), "history is incomplete") {
					t.Fatalf("err %v; want the violations and the incomplete history", err)
				}
			}
		})
	}
}

// The history_dropped record the blob sink writes (worker/history) is read
// with its count.
func TestParseHistory_HistoryDropped(t *testing.T) {
	line := `{"t":"2026-11-21T07:00:01Z","mono_ns":5,"identity":"w1","event":"history_dropped","reason":"history buffer full while storage was unreachable","dropped":7}` + "\n"
	evs, err := ParseHistory(strings.NewReader(line), "h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Event != EventHistoryDropped || evs[0].Dropped != 7 {
		t.Fatalf("got %+v", evs)
	}
	res := check(t, Run{Events: evs}, testParams())
	if res.Outcome() != VerdictInconclusive {
		t.Fatalf("verdict %s, want inconclusive", res.Outcome())
	}
}

func TestCheck_DuplicateRecordsAreOneRecord(t *testing.T) {
	started := ev(0, "w1", EventStartedLeading, 1, 10)
	started.MonoNS = 1_000_000
	again := started
	again.Source = "synthetic:reflushed" // the same line read from a re-flushed segment
	otherProcess := started
	otherProcess.MonoNS = 2_000_000 // same time, another process start: not a repeat
	laterStart := ev(0.5, "w1", EventStartedLeading, 1, 10.5)
	laterStart.MonoNS = 1_500_000 // same process, later: a real second start
	tests := []struct {
		name   string
		events []Event
		dups   int
		want   []string
	}{
		{name: "re-flushed started_leading is deduplicated", events: hist(one(started), one(again), leads("w2", 2, 11, 20, -1)), dups: 1},
		{
			name:   "a term started twice by one process is still S2",
			events: hist(one(started), one(laterStart), leads("w2", 2, 11, 20, -1)),
			want:   []string{"S2:term 1 was started twice"},
		},
		{
			name:   "same time but another process start is not merged",
			events: hist(one(started), one(otherProcess), leads("w2", 2, 11, 20, -1)),
			want:   []string{"S2:term 1 was started twice"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Start: t0, End: at(21)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
			if res.Duplicates != tc.dups {
				t.Errorf("Duplicates = %d, want %d", res.Duplicates, tc.dups)
			}
		})
	}
}

// Deleting the lock blob or its container takes the lease from the holder
// at once: the forced-break rule judges the holder, and L1 counts from the
// deletion with the short bound.
func TestCheck_DeletedLockIsAForcedLoss(t *testing.T) {
	for _, kind := range []string{FaultDeleteBlob, FaultDeleteContainer} {
		del := []Fault{{Kind: kind, Target: AllWorkers, Start: at(10)}}
		tests := []struct {
			name   string
			events []Event
			want   []string
		}{
			{
				name:   "holder steps down at its next renew; the next leader within a poll",
				events: hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 11, 30, -1)),
			},
			{
				name:   "holder keeps believing (404 taken as transient)",
				events: hist(leads("w1", 1, 0, 10, 20), leads("w2", 2, 11, 30, -1)),
				want:   []string{"break:10s after the " + kind},
			},
			{
				name:   "term goes back after the deletion",
				events: hist(leads("w1", 5, 0, 10, 12), leads("w2", 1, 11, 30, -1)),
				want:   []string{"S2:terms must strictly increase"},
			},
			{
				name:   "no leader within a poll of the deletion",
				events: hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 14, 30, -1)),
				want:   []string{"L1:bound 2.1s"},
			},
		}
		for _, tc := range tests {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				res := check(t, Run{Events: tc.events, Faults: del, Start: t0, End: at(31)}, testParams())
				wantViolations(t, res.Verdict, tc.want...)
				if len(res.Failovers) != 1 || res.Failovers[0].Basis != BasisDeleted {
					t.Errorf("failovers %+v; want one counted from the deletion", res.Failovers)
				}
			})
		}
	}
}

// A lost response costs the contender one more poll, never a lease
// duration; a late delivery is a window fault (L1 from its end).
func TestCheck_RequestFaults(t *testing.T) {
	// Graceful stop of w1 at 10, released at 10.2: bound 2.1 s → 12.3.
	stopped := func(next float64) []Event {
		rel := ev(10.2, "w1", EventReleased, 1, none)
		return hist(leads("w1", 1, 0, 10, 10.1), one(rel), leads("w2", 2, next, 30, -1))
	}
	graceful := Fault{Kind: FaultGraceful, Target: "w1", Start: at(10)}
	lost := Fault{Kind: FaultLostResponse, Target: "w2", Start: at(5), End: at(11.5)}
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
	}{
		{name: "graceful alone, within a poll", events: stopped(12), faults: []Fault{graceful}},
		{name: "graceful alone, a second poll is too late", events: stopped(13.5), faults: []Fault{graceful}, want: []string{"L1"}},
		{name: "a lost acquire answer allows one more poll", events: stopped(13.5), faults: []Fault{graceful, lost}},
		{
			name:   "a ghost lease that blocks for L is an L1 violation",
			events: stopped(26), faults: []Fault{graceful, lost},
			want: []string{"L1:after fault graceful"},
		},
		{
			name:   "a lost response held until the ghost expired does not excuse it",
			events: stopped(26), faults: []Fault{graceful, {Kind: FaultLostResponse, Target: "w2", Start: at(5), End: at(26)}},
			want: []string{"L1:after fault graceful"},
		},
		{
			name:   "a lost response never healed: inconclusive, no verdict",
			events: stopped(26), faults: []Fault{graceful, {Kind: FaultLostResponse, Target: "w2", Start: at(5)}},
		},
		{
			name:   "late delivery on the leader: a leader by its end + L + R",
			events: hist(leads("w1", 1, 0, 4, 6), leads("w2", 2, 20, 30, -1)),
			faults: []Fault{{Kind: FaultLateDelivery, Target: "w1", Start: at(5), End: at(8)}},
		},
		{
			name:   "late delivery on the leader: no leader by its end + L + R",
			events: hist(leads("w1", 1, 0, 4, 6), leads("w2", 2, 27, 30, -1)),
			faults: []Fault{{Kind: FaultLateDelivery, Target: "w1", Start: at(5), End: at(8)}},
			want:   []string{"L1:after fault late_delivery"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Start: t0, End: at(31)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}

// The record the blob sink really writes (worker/history) reaches the
// checker as a history_dropped event with its count: the contract between
// the two is the JSON, so it is tested with the sink's own type.
func TestParseHistory_TheSinksDroppedRecord(t *testing.T) {
	b, err := json.Marshal(history.Record{T: "2026-11-21T07:00:01Z", MonoNS: 5, Identity: "w1", Event: history.EventDropped, Dropped: 9})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ParseHistory(strings.NewReader(string(b)+"\n"), "sink.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Event != EventHistoryDropped || evs[0].Dropped != 9 {
		t.Fatalf("the sink's %s parsed as %+v", b, evs)
	}
}
