package checker

import (
	"strings"
	"testing"
	"time"
)

func TestCheckLocks_Rules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := LockParams{Margin: 2 * time.Second, RetryPeriod: time.Second, RequestTimeout: 2 * time.Second, RenewEvery: 2 * time.Second, MinHoldings: 2}
	got := func(c string, term int64, s float64) LockLine {
		return LockLine{Client: c, Ev: "got", Resource: "r", Term: term, T: at(s), ValidUntil: at(s + 13)}
	}
	wrote := func(c string, term, seq int64, s float64) LockLine {
		return LockLine{Client: c, Ev: "wrote", Resource: "r", Term: term, Seq: seq, T: at(s)}
	}
	unlocked := func(c string, term int64, s float64) LockLine {
		return LockLine{Client: c, Ev: "unlocked", Resource: "r", Term: term, T: at(s)}
	}
	entry := func(c string, term, seq int64) LedgerEntry { return LedgerEntry{Seq: seq, Term: term, Holder: c} }
	clean := []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), unlocked("a", 10, 2), got("b", 11, 3), wrote("b", 11, 2, 4), unlocked("b", 11, 5)}
	cleanLedger := []LedgerEntry{entry("a", 10, 1), entry("b", 11, 2)}
	for _, tc := range []struct {
		name   string
		lines  []LockLine
		ledger []LedgerEntry
		faults []LockFault
		end    float64
		want   string // "" = pass; else an invariant and a fragment
	}{
		{"clean handover", clean, cleanLedger, nil, 30, ""},
		{"no evidence", nil, nil, nil, 30, "evidence: no client got any lock"},
		{"too few holdings", clean[:3], cleanLedger[:1], nil, 30, "evidence: r: 1 holdings"},
		{"two holders at once", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), got("b", 11, 3), wrote("b", 11, 2, 4), unlocked("b", 11, 5), unlocked("a", 10, 6)}, cleanLedger, nil, 30, "LS1: r: a (term 10) believed it held"},
		{"terms not increasing", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), unlocked("a", 10, 2), got("b", 10, 3), wrote("b", 10, 2, 4), unlocked("b", 10, 5)}, []LedgerEntry{entry("a", 10, 1), entry("b", 10, 2)}, nil, 30, "LS2: r: term 10 (b) after term 10 (a)"},
		{"interleaved ledger", clean, []LedgerEntry{entry("b", 11, 1), entry("a", 10, 2)}, nil, 30, "interleaved writes"},
		{"ledger gap", clean, []LedgerEntry{entry("a", 10, 1), entry("b", 11, 3)}, nil, 30, "a gap or a repeat"},
		{"write under an ungranted term", clean, []LedgerEntry{entry("a", 10, 1), entry("c", 12, 2)}, nil, 30, "a term it was never granted"},
		{"logged write missing", clean, cleanLedger[:1], nil, 30, "which the ledger does not hold"},
		{"write after unlock", []LockLine{got("a", 10, 0), unlocked("a", 10, 2), wrote("a", 10, 1, 2.5), got("b", 11, 3), wrote("b", 11, 2, 4), unlocked("b", 11, 5)}, cleanLedger, nil, 30, "outside its holding"},
		{"killed holder taken in time", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), got("b", 11, 16), wrote("b", 11, 2, 17), unlocked("b", 11, 18)}, cleanLedger,
			[]LockFault{{Kind: LockFaultKillClient, Client: "a", Resource: "r", At: at(1.5)}}, 30, ""},
		{"killed holder taken late", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), got("b", 11, 25), wrote("b", 11, 2, 26), unlocked("b", 11, 27)}, cleanLedger,
			[]LockFault{{Kind: LockFaultKillClient, Client: "a", Resource: "r", At: at(1.5)}}, 40, "LL1: r: killed holder a's lock"},
		{"run ended before the bound", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), unlocked("a", 10, 1.2), got("c", 11, 1.3), wrote("c", 11, 2, 1.4)}, cleanLedger[:1],
			[]LockFault{{Kind: LockFaultKillClient, Client: "c", Resource: "r", At: at(1.5)}}, 5, "the run ended before the bound"},
		{"forced loss: overlap until the next renew", []LockLine{got("a", 10, 0), wrote("a", 10, 1, 1), got("b", 11, 2.5), lost("a", 10, 3.5), wrote("b", 11, 2, 4), unlocked("b", 11, 5)}, cleanLedger,
			[]LockFault{{Kind: LockFaultDeleteBlob, Resource: "r", At: at(2)}}, 30, ""},
		{"late unlock answered 0", clean, cleanLedger, []LockFault{{Kind: LockFaultLateUnlock, Client: "a", Resource: "r", Term: 10, Status: 0, At: at(4)}}, 30, "a late unlock with a's ended term 10 was answered 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckLocks(LockRun{Lines: tc.lines, Ledgers: map[string][]LedgerEntry{"r": tc.ledger}, Faults: tc.faults, End: at(tc.end)}, p)
			err := res.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want a pass, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want a violation saying %q, got %v", tc.want, err)
			}
		})
	}
}

func lost(c string, term int64, s float64) LockLine {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return LockLine{Client: c, Ev: "lost", Resource: "r", Term: term, T: t0.Add(time.Duration(s * float64(time.Second)))}
}

// A checker that saw no evidence has not passed: a resource nobody held, a
// replica's kill no request met, slow storage under which nothing was got
// or renewed — each is an evidence violation, never a pass.
func TestCheckLocks_FaultsThatHitNothingAreNoEvidence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := LockParams{Margin: 2 * time.Second, RetryPeriod: time.Second, RequestTimeout: 2 * time.Second, RenewEvery: 2 * time.Second, MinHoldings: 2}
	lines := []LockLine{
		{Client: "a", Ev: "got", Resource: "r", Term: 10, T: at(0), ValidUntil: at(13)},
		{Client: "a", Ev: "wrote", Resource: "r", Term: 10, Seq: 1, T: at(1)},
		{Client: "c", Ev: "replica_failed", T: at(1.5), Done: at(2.2)},
		{Client: "a", Ev: "unlocked", Resource: "r", Term: 10, T: at(2)},
		{Client: "b", Ev: "got", Resource: "r", Term: 11, T: at(3), ValidUntil: at(16)},
		{Client: "b", Ev: "renewed", Resource: "r", Term: 11, T: at(5), ValidUntil: at(18)},
		{Client: "b", Ev: "wrote", Resource: "r", Term: 11, Seq: 2, T: at(6)},
		{Client: "b", Ev: "unlocked", Resource: "r", Term: 11, T: at(7)},
	}
	ledger := []LedgerEntry{{Seq: 1, Term: 10, Holder: "a"}, {Seq: 2, Term: 11, Holder: "b"}}
	for _, tc := range []struct {
		name    string
		ledgers map[string][]LedgerEntry
		faults  []LockFault
		want    string
	}{
		{"every fault met", map[string][]LedgerEntry{"r": ledger}, []LockFault{{Kind: LockFaultKillReplica, At: at(2)}, {Kind: LockFaultSlowStorage, At: at(4), Until: at(6)}}, ""},
		{"a resource nobody held", map[string][]LedgerEntry{"r": ledger, "q": nil}, nil, "evidence: q: no client ever held it"},
		{"a replica killed between requests", map[string][]LedgerEntry{"r": ledger}, []LockFault{{Kind: LockFaultKillReplica, At: at(2.5)}}, "evidence: kill_replica"},
		{"slow storage nothing got or renewed", map[string][]LedgerEntry{"r": ledger}, []LockFault{{Kind: LockFaultSlowStorage, At: at(8), Until: at(10)}}, "evidence: slow_storage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLocks(LockRun{Lines: lines, Ledgers: tc.ledgers, Faults: tc.faults, End: at(30)}, p).Err()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want a pass, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want a violation saying %q, got %v", tc.want, err)
			}
		})
	}
}
