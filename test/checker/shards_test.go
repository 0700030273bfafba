package checker

import (
	"strings"
	"testing"
	"time"
)

// owns is a shard ownership: like leads, with shard events. stop < 0: never
// stopped (crashed, or still owning at run end).
func owns(id string, shard int, term int64, from, lastRenew, stop float64) []Event {
	out := leads(id, term, from, lastRenew, stop)
	for i := range out {
		s := shard
		out[i].Shard = &s
		switch out[i].Event {
		case EventStartedLeading:
			out[i].Event = EventShardAcquired
		case EventRenewed:
			out[i].Event = EventShardRenewed
		case EventStoppedLeading:
			out[i].Event = EventShardReleased
		}
	}
	return out
}

// leaseReleased is the shard lease given back at sec.
func leaseReleased(id string, shard int, term int64, sec float64) []Event {
	e := ev(sec, id, EventShardLeaseReleased, term, none)
	e.Shard = &shard
	return []Event{e}
}

func member(id string, sec float64, joined bool) []Event {
	kind := EventMemberLeft
	if joined {
		kind = EventMemberJoined
	}
	return one(ev(sec, id, kind, 0, none))
}

// moved is a shard moved on purpose at sec: the old owner stops and releases,
// the new one acquires 0.3 s later and owns it until end.
func moved(shard int, from, to string, oldTerm int64, ownedSince, sec, end float64) []Event {
	return hist(owns(from, shard, oldTerm, ownedSince, sec-0.1, sec), leaseReleased(from, shard, oldTerm, sec+0.05),
		owns(to, shard, oldTerm+1, sec+0.3, end, end))
}

// The base run: N = 4 over w1, w2, w3 (joined at 0–0.4 s; w1 leads the
// election), settled from 1 s: w1 owns 0 and 1, w2 owns 2, w3 owns 3; the
// run ends at 70 s. Settle is 20 s in these tests.
func shardBase(extra ...[]Event) []Event {
	parts := [][]Event{
		one(ev(0, "w1", EventStartedLeading, 100, 10)),
		member("w1", 0, true), member("w2", 0.2, true), member("w3", 0.4, true),
	}
	return hist(append(parts, extra...)...)
}

func shardParams() ShardParams { return ShardParams{Params: testParams(), Settle: 20 * time.Second} }

func checkShards(t *testing.T, run ShardRun) ShardResult {
	t.Helper()
	res, err := CheckShards(run, shardParams())
	if err != nil {
		t.Fatalf("CheckShards: %v", err)
	}
	return res
}

func TestCheckShards(t *testing.T) {
	crash := []Fault{{Kind: FaultCrash, Target: "w3", Start: at(30)}}
	steady := [][]Event{owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70), owns("w2", 2, 1020, 1, 69, 70)}
	tests := []struct {
		name   string
		events []Event
		faults []Fault
		want   []string
	}{
		{
			name: "follower crash: its shard goes to the standby within the bound, balanced, one move",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none), // last renew 29 s: bound 29 + 17.1
				owns("w2", 3, 1031, 44.5, 69, 70))...),
			faults: crash,
		},
		{
			name: "overlap: the standby acquires while the owner still believes",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none), // w3 believes until 39 s (crash at 30 caps it)
				owns("w2", 3, 1031, 29.5, 69, 70))...),
			want: []string{"shard S1:shard 3"},
		},
		{
			name: "late takeover after a crash",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none),
				owns("w2", 3, 1031, 48, 69, 70))...),
			faults: crash,
			want:   []string{"shard L1:shard 3"},
		},
		{
			name: "unbalanced after a crash: the fullest member took the shard",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none),
				owns("w1", 3, 1031, 44.5, 69, 70))...),
			faults: crash,
			want:   []string{"balance:own map[w1:3 w2:1]"},
		},
		{
			name: "needless moves: balanced in the end, but three moves where one was required",
			events: shardBase(owns("w3", 3, 1030, 1, 29, none), owns("w2", 3, 1031, 44.5, 69, 70),
				moved(0, "w1", "w2", 1000, 1, 45, 70), moved(2, "w2", "w1", 1020, 1, 46, 70),
				owns("w1", 1, 1010, 1, 69, 70)),
			faults: crash,
			want:   []string{"stickiness:moved 3 shards"},
		},
		{
			name: "a leader change alone moves shards",
			events: hist(shardBase(owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70),
				moved(2, "w2", "w3", 1020, 1, 35, 70), moved(3, "w3", "w2", 1030, 1, 35.5, 70)),
				one(ev(30, "w2", EventStartedLeading, 101, 40))),
			want: []string{"stickiness:leader change"},
		},
		{
			name: "a shard ledger replaced hands its shard over and the planner rebalances: not the leader change's doing",
			events: hist(shardBase(owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70),
				moved(2, "w2", "w3", 1020, 1, 35, 70), moved(3, "w3", "w2", 1030, 1, 35.5, 70)),
				one(ev(30, "w2", EventStartedLeading, 101, 40))),
			faults: []Fault{{Kind: FaultLedgerBlobType, Target: AllWorkers, Start: at(12), End: at(12.5)}},
		},
		{
			name: "a shard ledger replaced longer than Settle before the leader change excuses nothing",
			events: hist(shardBase(owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70),
				moved(2, "w2", "w3", 1020, 1, 35, 70), moved(3, "w3", "w2", 1030, 1, 35.5, 70)),
				one(ev(30, "w2", EventStartedLeading, 101, 40))),
			faults: []Fault{{Kind: FaultLedgerBlobType, Target: AllWorkers, Start: at(5), End: at(5.5)}},
			want:   []string{"stickiness:leader change"},
		},
		{
			name: "a shard released on purpose and owned again too late",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 39.9, 40), leaseReleased("w3", 3, 1030, 40),
				owns("w2", 3, 1031, 45, 69, 70))...),
			want: []string{"shard L1:released by w3"},
		},
		{
			name:   "a shard nobody ever owned",
			events: shardBase(steady...),
			want:   []string{"shard L1:shard 3: nobody owned it", "balance:several owners map[]"},
		},
		{
			name: "a shard term started twice",
			events: shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none),
				owns("w2", 3, 1030, 44.5, 69, 70))...),
			faults: crash,
			want:   []string{"shard S2:shard 3: term 1030 was started twice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := ShardRun{Run: Run{Events: tt.events, Faults: tt.faults, Start: at(0), End: at(70)}, Shards: 4}
			res := checkShards(t, run)
			wantViolations(t, res.Verdict, tt.want...)
			if len(res.Balance) == 0 {
				t.Errorf("expected at least one judged balance moment; got none")
			}
		})
	}
}

// The balance check after the crash in a clean run records what it judged.
func TestCheckShards_RecordsBalanceAndMoves(t *testing.T) {
	ev := shardBase(owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70), owns("w2", 2, 1020, 1, 69, 70),
		owns("w3", 3, 1030, 1, 29, none), owns("w2", 3, 1031, 44.5, 69, 70))
	res := checkShards(t, ShardRun{Run: Run{Events: ev, Faults: []Fault{{Kind: FaultCrash, Target: "w3", Start: at(30)}}, Start: at(0), End: at(70)}, Shards: 4})
	if !res.OK() {
		t.Fatalf("expected a clean run: %v", res.Err())
	}
	if len(res.Balance) != 2 {
		t.Fatalf("expected two judged moments (after the joins, after the crash), got %+v", res.Balance)
	}
	b := res.Balance[1]
	if b.Moves != 1 || b.Minimum != 1 || b.Counts["w1"] != 2 || b.Counts["w2"] != 2 || len(b.Members) != 2 {
		t.Fatalf("after the crash: expected members w1, w2 with 2 each and 1 move of a minimum 1, got %+v", b)
	}
	if fo := res.PerShard[3].Failovers; len(fo) != 1 || fo[0].NewLeader != "w2" {
		t.Fatalf("expected shard 3's failover to w2 to be measured, got %+v", fo)
	}
	// A crashed owner's belief ends at its valid_until (last renew 29 s + D),
	// not at the crash's stamp: the election's rule since the crash cap
	// applies only to beliefs without valid_until.
	if lanes := ShardLanes(res, at(0)); !strings.Contains(lanes, "shard 3: w3 [+1.0s, +39.0s) w2 [+44.5s, +70.0s)") {
		t.Fatalf("unexpected lanes:\n%s", lanes)
	}
}

// A run that never settles for Settle has no evidence of balance.
func TestCheckShards_NoSettledMomentIsNoEvidence(t *testing.T) {
	ev := shardBase(owns("w1", 0, 1000, 1, 9, 10))
	res := checkShards(t, ShardRun{Run: Run{Events: ev, Start: at(0), End: at(10)}, Shards: 1})
	wantViolations(t, res.Verdict, "balance:no evidence of balance")
}

// Each shard's ledger is judged by the election's ledger rules: a gap in
// shard 0's ledger is a shard S2 violation.
func TestCheckShards_LedgerGapIsShardS2(t *testing.T) {
	ev := shardBase(owns("w1", 0, 1000, 1, 9, 10))
	ledger := func(seqs ...int64) []LedgerEntry {
		var out []LedgerEntry
		for i, s := range seqs {
			out = append(out, LedgerEntry{Seq: s, Term: 1000, Holder: "w1", At: at(2 + float64(i))})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		seqs []int64
		want []string
	}{
		{"gap-free", []int64{1, 2, 3}, nil},
		{"gap", []int64{1, 2, 4}, []string{"shard S2:shard 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := CheckShards(ShardRun{Run: Run{Events: ev, Start: at(0), End: at(30)}, Shards: 1,
				Ledgers: map[int][]LedgerEntry{0: ledger(tc.seqs...)}}, ShardParams{Params: testParams(), Settle: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			wantViolations(t, res.Verdict, tc.want...)
		})
	}
}

// A graceful leave releases the leaver's shards before its member lease, so
// the pool is judged from the moment of the stop: the one move is measured
// against a minimum of one.
func TestCheckShards_GracefulLeaveIsJudgedForStickiness(t *testing.T) {
	ev := shardBase(owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70), owns("w2", 2, 1020, 1, 69, 70),
		owns("w3", 3, 1030, 1, 29, 30.1), leaseReleased("w3", 3, 1030, 30.15), member("w3", 30.2, false),
		owns("w2", 3, 1031, 30.5, 69, 70))
	res := checkShards(t, ShardRun{Run: Run{Events: ev, Faults: []Fault{{Kind: FaultGraceful, Target: "w3", Start: at(30)}}, Start: at(0), End: at(70)}, Shards: 4})
	if !res.OK() {
		t.Fatalf("expected a clean run: %v", res.Err())
	}
	if len(res.Balance) != 2 {
		t.Fatalf("expected two judged moments, got %+v", res.Balance)
	}
	if b := res.Balance[1]; b.Minimum != 1 || b.Moves != 1 {
		t.Fatalf("expected the leave judged for stickiness (1 move, minimum 1), got %+v", b)
	}
}

// A killed owner's last shard renew may be granted by storage and never
// logged, as the election's (TestCheck_L1): its proxy's record of the grant
// moves the shard's L1 basis; a grant of another shard's lease does not.
func TestCheckShards_KilledOwnersGrantedRenewCounts(t *testing.T) {
	crash := []Fault{{Kind: FaultCrash, Target: "w3", Start: at(30)}}
	steady := [][]Event{owns("w1", 0, 1000, 1, 69, 70), owns("w1", 1, 1010, 1, 69, 70), owns("w2", 2, 1020, 1, 69, 70)}
	// Last logged renew of shard 3 at 29 (bound 29 + 17.1 = 46.1); storage
	// granted one more at 29.999, 1 ms before the kill: bound 47.099.
	events := shardBase(append(steady, owns("w3", 3, 1030, 1, 29, none), owns("w2", 3, 1031, 46.9, 69, 70))...)
	paths := map[int]string{0: "/a/c/s0", 1: "/a/c/s1", 2: "/a/c/s2", 3: "/a/c/s3"}
	for _, tc := range []struct {
		name    string
		granted []GrantedRenew
		want    []string
	}{
		{"the grant of shard 3's renew counts", []GrantedRenew{{Slot: "w3", Path: "/a/c/s3", Arrived: at(29.995), Answered: at(29.999)}}, nil},
		{"a grant of another shard's lease does not", []GrantedRenew{{Slot: "w3", Path: "/a/c/s2", Arrived: at(29.995), Answered: at(29.999)}}, []string{"shard L1:shard 3"}},
		{"no grant recorded: the logged renew is the basis", nil, []string{"shard L1:shard 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := checkShards(t, ShardRun{Run: Run{Events: events, Faults: crash, Start: at(0), End: at(70), GrantedRenews: tc.granted}, Shards: 4, ShardPaths: paths})
			var got []string
			for _, v := range res.Violations {
				if v.Invariant == InvShardL1 {
					got = append(got, v.Message)
				}
			}
			if len(got) != len(tc.want) || (len(got) == 1 && !strings.Contains(got[0], "shard 3")) {
				t.Fatalf("shard L1 violations %q, want %q", got, tc.want)
			}
		})
	}
}
