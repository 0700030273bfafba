package checker

import (
	"strings"
	"testing"
	"time"
)

func TestCheck_S1(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		skew   time.Duration
		end    float64
		want   []string
	}{
		{
			name:   "clean handover after stop",
			events: hist(leads("w1", 1, 0, 18, 20), leads("w2", 2, 21, 40, -1)),
			end:    41,
		},
		{
			name:   "second leader starts before the first stops",
			events: hist(leads("w1", 1, 0, 18, 20), leads("w2", 2, 19, 30, -1)),
			end:    31,
			want:   []string{"S1:terms 1 and 2 overlap by 1s"},
		},
		{
			name: "unsafe worker: no valid_until, never stopped, while another term starts",
			events: hist(
				one(ev(0, "w1", EventStartedLeading, 1, none)),
				one(ev(20, "w1", EventRenewFailed, 0, none)),
				leads("w2", 2, 30, 40, -1)),
			end:  45,
			want: []string{"S1:to +45.000s (07:00:45.000000) [ended by run end]"},
		},
		{
			name: "unsafe worker keeps claiming after a newer term of its own",
			events: hist(
				one(ev(0, "w1", EventStartedLeading, 1, none)),
				one(ev(30, "w1", EventStartedLeading, 3, none)),
				leads("w2", 2, 20, 24, 25)),
			end:  40,
			want: []string{"S1:terms 1 and 2", "S1:terms 1 and 3"},
		},
		{
			name: "paused leader: valid_until ends the belief, late stop does not matter",
			events: hist(leads("w1", 1, 0, 2, -1), // last renew at 2: valid until 12
				one(ev(40, "w1", EventStoppedLeading, 1, 12)),
				leads("w2", 2, 29, 50, -1)),
			end: 51,
		},
		{
			name:   "next term starts exactly at the valid_until: no overlap",
			events: hist(leads("w1", 1, 0, 2, -1), leads("w2", 2, 12, 20, -1)),
			end:    21,
		},
		{
			name:   "next term starts 1 ms before the valid_until",
			events: hist(leads("w1", 1, 0, 2, -1), leads("w2", 2, 11.999, 20, -1)),
			end:    21,
			want:   []string{"S1:overlap by 1ms"},
		},
		{
			name: "crash caps a belief without valid_until at the kill",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none)),
				leads("w2", 2, 6, 20, -1)),
			faults: []Fault{{Kind: FaultCrash, Target: "w1", Start: at(5)}},
			end:    21,
		},
		{
			name: "without the crash fault the unbounded belief overlaps",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none)),
				leads("w2", 2, 6, 20, -1)),
			end:  21,
			want: []string{"S1:[ended by run end]"},
		},
		{
			// The fault is stamped before the kill lands (on Azure, before a
			// multi-second ARM stop): the worker's own deadline is the bound.
			name:   "crash does not cap a belief with valid_until",
			events: hist(leads("w1", 1, 0, 4, -1), leads("w2", 2, 6, 20, -1)),
			faults: []Fault{{Kind: FaultCrash, Target: "w1", Start: at(5)}},
			end:    21,
			want:   []string{"S1:terms 1 and 2 overlap by 8s"},
		},
		{
			name:   "crash after the valid_until: no overlap",
			events: hist(leads("w1", 1, 0, 4, -1), leads("w2", 2, 14, 20, -1)),
			faults: []Fault{{Kind: FaultCrash, Target: "w1", Start: at(5)}},
			end:    21,
		},
		{
			name: "a crash of another worker does not cap the belief",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none)),
				leads("w2", 2, 6, 20, -1)),
			faults: []Fault{{Kind: FaultCrash, Target: "w3", Start: at(5)}},
			end:    21,
			want:   []string{"S1"},
		},
		{
			name:   "overlap within the clock skew is tolerated",
			events: hist(leads("w1", 1, 0, 18, 20), leads("w2", 2, 19.95, 30, -1)),
			skew:   100 * time.Millisecond,
			end:    31,
		},
		{
			name:   "overlap beyond the clock skew",
			events: hist(leads("w1", 1, 0, 18, 20), leads("w2", 2, 19.85, 30, -1)),
			skew:   100 * time.Millisecond,
			end:    31,
			want:   []string{"S1:overlap by 150ms"},
		},
		{
			name: "renewed without a term extends the worker's latest term",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, 10)),
				one(ev(8, "w1", EventRenewed, 0, 18)),
				leads("w2", 2, 15, 20, -1)),
			end:  21,
			want: []string{"S1:terms 1 and 2 overlap by 3s"},
		},
		{
			name:   "one leader still leading at run end is fine",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none))),
			end:    100,
		},
		{
			name: "unknown events and followers are ignored",
			events: hist(leads("w1", 1, 0, 18, 20),
				one(ev(5, "w2", EventObservedLeader, 1, none)),
				one(ev(6, "w2", "gossip_from_the_future", 9, 99)),
				leads("w2", 2, 21, 30, -1)),
			end: 31,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			p.ClockSkew = tc.skew
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Start: t0, End: at(tc.end)}, p)
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}

func TestCheck_ForcedBreak(t *testing.T) {
	// Allowed: renew interval 2 s + request timeout 2 s + ε 1 s = 5 s after the break at 10.
	brk := []Fault{{Kind: FaultBreak, Start: at(10)}}
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
	}{
		{
			name:   "holder notices at its next renew; overlap with the next leader is allowed",
			events: hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 11, 30, -1)),
			faults: brk,
		},
		{
			name:   "holder stops exactly at the limit",
			events: hist(leads("w1", 1, 0, 10, 15), leads("w2", 2, 11, 30, -1)),
			faults: brk,
		},
		{
			name:   "holder keeps believing past the limit",
			events: hist(leads("w1", 1, 0, 10, 15.5), leads("w2", 2, 11, 30, -1)),
			faults: brk,
			want:   []string{"break:5.5s after the break"},
		},
		{
			name:   "unsafe holder never steps down after a break",
			events: hist(one(ev(0, "w1", EventStartedLeading, 1, none)), leads("w2", 2, 11, 30, -1)),
			faults: brk,
			want:   []string{"break:[ended by run end]"},
		},
		{
			name: "S1 still applies to the holder and a third leader",
			events: hist(leads("w1", 1, 0, 10, 14), leads("w2", 2, 11, 11, 12),
				leads("w3", 3, 13, 30, -1)),
			faults: brk,
			want:   []string{"S1:terms 1 and 3"},
		},
		{
			name:   "the same overlap without a break is an S1 violation",
			events: hist(leads("w1", 1, 0, 10, 12), leads("w2", 2, 11, 30, -1)),
			want:   []string{"S1"},
		},
		{
			// make chaos, run soak: the container deleted, then the holder's
			// supervisor paused 0.66 s later, before its next renew. Frozen, it
			// cannot learn; its belief ends at its own deadline (S1's rule
			// for a paused leader), 9.5 s after the break.
			name:   "a holder frozen before its next renew believes until its deadline",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultPause, Target: "w1", Start: at(10.66), End: at(33)}}, brk...),
		},
		{
			name:   "the same holder not frozen must have learned at its next renew",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: brk,
			want:   []string{"break:9.5s after the break"},
		},
		{
			name:   "a holder frozen only after its next renew was due and answered has no excuse",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultPause, Target: "w1", Start: at(15.2), End: at(33)}}, brk...),
			want:   []string{"break:9.5s after the break"},
		},
		{
			// make test, TestElection_SeededSoak (seed 1796074573683289824):
			// the lock blob deleted, then the holder crashed (< 1.5 s later),
			// before its next renew. Dead, it cannot learn; a crash does not
			// cap a belief with a deadline (intervals), so it is held to its
			// deadline, as a frozen holder is.
			name:   "a holder killed before its next renew believes until its deadline",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultCrash, Target: "w1", Start: at(10.7)}}, brk...),
		},
		{
			name:   "a holder killed before the break believes until its deadline",
			events: hist(leads("w1", 1, 1.5, 7.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultCrash, Target: "w1", Start: at(8)}}, brk...),
		},
		{
			name:   "a holder killed only after its next renew was due and answered has no excuse",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultCrash, Target: "w1", Start: at(15.2)}}, brk...),
			want:   []string{"break:9.5s after the break"},
		},
		{
			name:   "another worker's crash excuses nobody",
			events: hist(leads("w1", 1, 1.5, 9.5, -1), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultCrash, Target: "w3", Start: at(10.7)}}, brk...),
			want:   []string{"break:9.5s after the break"},
		},
		{
			// A soak's step after a break may cut the holder off before its
			// next renew: it then hears nothing definite and steps down at
			// its renew deadline (its valid_until at the latest).
			name:   "a holder cut off from storage before its next renew is held to its deadline",
			events: hist(leads("w1", 1, 1.5, 9.5, 19.4), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultPartition, Target: "w1", Start: at(10.5), End: at(25)}}, brk...),
		},
		{
			name:   "storage down for everyone at the break holds the holder to its deadline",
			events: hist(leads("w1", 1, 1.5, 9.5, 19.4), leads("w2", 2, 21, 30, -1)),
			faults: append([]Fault{{Kind: FaultOutage, Start: at(10.2), End: at(20)}}, brk...),
		},
		{
			name:   "a holder frozen before its next renew may step down after its thaw, before its deadline",
			events: hist(leads("w1", 1, 1.5, 9.5, 17.2), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultPause, Target: "w1", Start: at(10.66), End: at(16.8)}}, brk...),
		},
		{
			name:   "a holder cut off only after its next renew was due and answered has no excuse",
			events: hist(leads("w1", 1, 1.5, 9.5, 19.4), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultPartition, Target: "w1", Start: at(15.2), End: at(25)}}, brk...),
			want:   []string{"break:9.4s after the break"},
		},
		{
			name:   "slow reads of member reports do not keep a holder from hearing",
			events: hist(leads("w1", 1, 1.5, 9.5, 19.4), leads("w2", 2, 11, 30, -1)),
			faults: append([]Fault{{Kind: FaultSlowReads, Target: "w1", Start: at(10.5), End: at(25)}}, brk...),
			want:   []string{"break:9.4s after the break"},
		},
		{
			name:   "break of a lease nobody holds demands nothing",
			events: hist(leads("w1", 1, 0, 4, 5), leads("w2", 2, 11, 30, -1)),
			faults: brk,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: tc.events, Faults: tc.faults, Start: t0, End: at(31)}, testParams())
			// L1 for the break is covered in liveness tests; here only safety.
			var safety Result
			for _, v := range res.Violations {
				if v.Invariant != InvL1 {
					safety.Violations = append(safety.Violations, v)
				}
			}
			wantViolations(t, safety.Verdict, tc.want...)
		})
	}
}

func TestCheck_S2Terms(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		skew   time.Duration
		want   []string
	}{
		{
			name:   "strictly increasing, gaps in terms allowed",
			events: hist(leads("w1", 1, 0, 4, 5), leads("w2", 4, 6, 8, 9), leads("w1", 5, 10, 12, -1)),
		},
		{
			name:   "term decreases",
			events: hist(leads("w1", 5, 0, 4, 5), leads("w2", 3, 6, 8, -1)),
			want:   []string{"S2:w2 started term 3"},
		},
		{
			name:   "same term started by two identities",
			events: hist(leads("w1", 2, 0, 4, 5), leads("w2", 2, 6, 8, -1)),
			want:   []string{"S2:term 2 was started twice"},
		},
		{
			name:   "same term started twice by one identity",
			events: hist(leads("w1", 2, 0, 4, 5), leads("w1", 2, 6, 8, -1)),
			want:   []string{"S2:term 2 was started twice"},
		},
		{
			name:   "started_leading without a term",
			events: hist(leads("w1", 0, 0, 4, -1)),
			want:   []string{"S2:without a fencing term"},
		},
		{
			name: "starts reordered within the clock skew",
			events: hist(one(ev(0, "w1", EventStartedLeading, 2, 0.01)),
				one(ev(-0.01, "w2", EventStartedLeading, 3, -0.005))),
			skew: 50 * time.Millisecond,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			p.ClockSkew = tc.skew
			res := check(t, Run{Events: tc.events, Start: at(-1), End: at(20)}, p)
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}

func TestCheck_S2Ledger(t *testing.T) {
	events := hist(leads("w1", 1, 0, 8, 10), leads("w2", 2, 11, 30, -1))
	e := func(seq, term int64, holder string, sec float64) LedgerEntry {
		return LedgerEntry{Seq: seq, Term: term, Holder: holder, At: at(sec)}
	}
	tests := []struct {
		name   string
		ledger []LedgerEntry
		want   []string
	}{
		{
			name:   "clean ledger",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(2, 1, "w1", 5), e(3, 2, "w2", 12), e(4, 2, "w2", 20)},
		},
		{
			name:   "ledger must start at seq 1 (it is never trimmed)",
			ledger: []LedgerEntry{e(7, 1, "w1", 1), e(8, 2, "w2", 12)},
			want:   []string{"S2:the first entry has seq 7, want 1"},
		},
		{
			name:   "ledger starting at seq 2",
			ledger: []LedgerEntry{e(2, 1, "w1", 1), e(3, 2, "w2", 12)},
			want:   []string{"S2:entries 1..1 missing"},
		},
		{
			name:   "entries from before the run need no started term",
			ledger: []LedgerEntry{e(1, 1, "old", -100), e(2, 1, "w1", 1)},
		},
		{
			name:   "gap",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(2, 1, "w1", 5), e(4, 2, "w2", 12)},
			want:   []string{"S2:missing seq 3..3"},
		},
		{
			name:   "duplicate",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(2, 1, "w1", 5), e(2, 2, "w2", 12), e(3, 2, "w2", 13)},
			want:   []string{"S2:duplicate seq 2"},
		},
		{
			name:   "out of order",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(3, 1, "w1", 5), e(2, 1, "w1", 6)},
			want:   []string{"S2:missing seq 2..2", "S2:seq out of order"},
		},
		{
			name:   "term decreases along seq",
			ledger: []LedgerEntry{e(1, 2, "w2", 12), e(2, 1, "w1", 9)},
			want:   []string{"S2:term decreased from 2 to 1"},
		},
		{
			name:   "term nobody started",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(2, 7, "w3", 15)},
			want:   []string{"S2:term 7 was never started"},
		},
		{
			name:   "entry without a term",
			ledger: []LedgerEntry{e(1, 0, "w1", 1)},
			want:   []string{"S2:entry without a fencing term"},
		},
		{
			name:   "holder is not the term's leader",
			ledger: []LedgerEntry{e(1, 1, "w2", 1)},
			want:   []string{`S2:written by "w2", but w1 started`},
		},
		{
			name:   "deposed leader's write after its belief ended",
			ledger: []LedgerEntry{e(1, 1, "w1", 1), e(2, 1, "w1", 10.5), e(3, 2, "w2", 12)},
			want:   []string{"S2:stamped 500ms after"},
		},
		{
			name:   "write exactly at the stop is fine",
			ledger: []LedgerEntry{e(1, 1, "w1", 10), e(2, 2, "w2", 12)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, Run{Events: events, Ledger: tc.ledger, Start: at(-1), End: at(31)}, testParams())
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}

func TestCheck_LedgerViolationsAreCapped(t *testing.T) {
	var ledger []LedgerEntry
	for i := int64(1); i <= 100; i++ {
		ledger = append(ledger, LedgerEntry{Seq: 2*i - 1, Term: 1, Holder: "w1", At: at(1)})
	}
	res := check(t, Run{Events: leads("w1", 1, 0, 8, -1), Ledger: ledger, Start: t0, End: at(9)}, testParams())
	if n := len(res.Violations); n != maxLedgerViolations+1 {
		t.Fatalf("expected %d violations (capped plus a summary), got %d", maxLedgerViolations+1, n)
	}
	if last := res.Violations[len(res.Violations)-1].Message; !strings.Contains(last, "79 more") {
		t.Errorf("expected the summary to count the 79 unlisted gaps, got %q", last)
	}
}

func TestCheck_ViolationQuotesEvidence(t *testing.T) {
	dir := t.TempDir()
	p1 := writeFile(t, dir, "w1.jsonl",
		`{"t":"2026-11-21T07:00:00Z","mono_ns":1,"identity":"w1","event":"started_leading","term":1}`+"\n")
	p2 := writeFile(t, dir, "w2.jsonl",
		`{"t":"2026-11-21T07:00:01Z","mono_ns":1,"identity":"w2","event":"observed_leader","leader":"w1","term":1}`+"\n"+
			`{"t":"2026-11-21T07:00:30Z","mono_ns":2,"identity":"w2","event":"started_leading","term":2,"valid_until":"2026-11-21T07:00:40Z"}`+"\n")
	evs, err := ReadHistory(p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	res := check(t, Run{Events: evs, End: at(35)}, testParams())
	wantViolations(t, res.Verdict, "S1")
	msg := res.Violations[0].Message
	for _, frag := range []string{"w1.jsonl:1: {", `"event":"started_leading","term":1}`, "w2.jsonl:2: {"} {
		if !strings.Contains(msg, frag) {
			t.Errorf("violation message does not quote %q:\n%s", frag, msg)
		}
	}
	if v := res.Violations[0]; !v.At.Equal(at(30)) || strings.Join(v.Workers, ",") != "w1,w2" {
		t.Errorf("violation placed at %v on %v, want the overlap start +30s on w1,w2", v.At, v.Workers)
	}
	if len(res.Violations[0].Evidence) != 2 {
		t.Errorf("expected the two started_leading events as evidence, got %v", res.Violations[0].Evidence)
	}
}

func TestCheck_InvalidParams(t *testing.T) {
	p := testParams()
	p.RetryPeriod = 0
	p.ClockSkew = -1
	_, err := Check(Run{}, p)
	if err == nil || !strings.Contains(err.Error(), "RetryPeriod must be > 0") || !strings.Contains(err.Error(), "ClockSkew must be >= 0") {
		t.Fatalf("expected an error naming RetryPeriod and ClockSkew, got %v", err)
	}
}
