package checker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// The lock checker judges named resource locks (worker/mutex, blobleader
// locks) per resource from the clients' own lines — each client logs when
// it got a lock (the send of its lock request, and the end of its belief:
// send + expiry − margin), every ledger append it made, every renew, and
// when it unlocked or stopped believing — and from each resource's fenced
// ledger. docs/architecture.md#resource-locks
// states the rules and the scenarios.

// LockLine is one line a lock client wrote (test/cmd/lockclient).
type LockLine struct {
	Client   string    `json:"client"`
	Ev       string    `json:"ev"` // got, renewed, wrote, unlocked, lost, denied, …
	Resource string    `json:"resource"`
	Term     int64     `json:"term"`
	T        time.Time `json:"t"` // the send of the request the line reports
	// Done is when its answer came (got, renewed, denied, lock_error): a
	// got's holding starts there (a lock request may wait), while its
	// belief ends at the send + expiry − margin (ValidUntil) and storage's
	// lease at most expiry after Done (leaseEnd).
	Done       time.Time `json:"done"`
	ValidUntil time.Time `json:"valid_until"`
	Seq        int64     `json:"seq"`
	Status     int       `json:"status"`
	Reason     string    `json:"reason"`
}

// ParseLockLines reads a client's JSONL lines.
func ParseLockLines(r io.Reader) ([]LockLine, error) {
	var out []LockLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l LockLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("lock line %q: %w", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// Lock fault kinds the checker reads.
const (
	LockFaultKillClient = "kill_client" // a client SIGKILLed (Client; Resource it held, if any)
	LockFaultDeleteBlob = "delete_blob" // a resource's lock blob deleted (Resource): a forced loss
	LockFaultLateUnlock = "late_unlock" // an unlock with an ended holding's term delivered late (Client, Resource, Term; Status answered)
	// The faults below change no bound; the checker wants evidence each hit
	// the clients, or the run did not test it.
	LockFaultKillReplica = "kill_replica" // a service replica SIGKILLed: some client's request to it failed (a replica_failed line sent before At)
	LockFaultSlowStorage = "slow_storage" // the service's storage slowed from At to Until: some lock was got or renewed in between
)

// LockFault is one fault a lock scenario injected.
type LockFault struct {
	Kind     string
	Client   string
	Resource string
	Term     int64
	Status   int // late_unlock: the status the service answered
	At       time.Time
	Until    time.Time // slow_storage: when the fault was removed
}

// LockRun is everything the lock checker judges.
type LockRun struct {
	Lines   []LockLine
	Ledgers map[string][]LedgerEntry // by resource
	Faults  []LockFault
	End     time.Time // when the run stopped collecting
	Sched   *Sched    // the harness's CPU probe (stall.go); nil: none
}

// LockParams are the bounds the checker holds the service to.
type LockParams struct {
	Margin         time.Duration // clients believe until send + expiry − Margin
	RetryPeriod    time.Duration // the service's poll period P for a waiting lock
	RequestTimeout time.Duration // the service's storage request timeout
	RenewEvery     time.Duration // how often a holder renews (learns of a forced loss)
	MinHoldings    int           // per resource, or the run proves nothing
}

// holding is one client's belief that it holds a resource at a term.
type holding struct {
	client, resource string
	term             int64
	sent             time.Time // the send of the lock request that got it: storage granted it in [sent, start]
	start, end       time.Time
	ended            string // how the belief ended: unlocked, lost, killed, deadline
}

// CheckLocks judges a lock run: LS1 (never two holders of a resource at
// once), LS2 (terms of a resource strictly increase; its ledger is gap-free,
// its terms never go back, and every entry is a write its writer made under
// a term it was granted, within its holding), LL1 (a killed holder's lock
// is taken by a waiting client within its bound) and evidence.
func CheckLocks(run LockRun, p LockParams) Result {
	var res Result
	hs := lockHoldings(run)
	byRes := map[string][]holding{}
	for _, h := range hs {
		byRes[h.resource] = append(byRes[h.resource], h)
	}
	if len(run.Lines) == 0 || len(byRes) == 0 {
		res.Violations = append(res.Violations, Violation{Invariant: "evidence", Message: "no client got any lock: nothing to judge"})
		return res
	}
	names := make([]string, 0, len(byRes))
	for r := range byRes {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		h := byRes[r]
		sort.Slice(h, func(i, j int) bool { return h[i].start.Before(h[j].start) })
		res.Violations = append(res.Violations, checkLockS1(r, h, run.Faults, p)...)
		res.Violations = append(res.Violations, checkLockTerms(r, h)...)
		res.Violations = append(res.Violations, checkLockLedger(r, h, run)...)
		if len(h) < p.MinHoldings || len(run.Ledgers[r]) == 0 {
			res.Violations = append(res.Violations, Violation{Invariant: "evidence",
				Message: fmt.Sprintf("%s: %d holdings and %d ledger entries; the run needs ≥ %d holdings and a ledger to judge", r, len(h), len(run.Ledgers[r]), p.MinHoldings)})
		}
	}
	for r := range run.Ledgers {
		if len(byRes[r]) == 0 {
			res.Violations = append(res.Violations, Violation{Invariant: "evidence", Message: fmt.Sprintf("%s: no client ever held it: nothing to judge", r)})
		}
	}
	l1, stalled := checkLockL1(byRes, run, p)
	res.Violations = append(res.Violations, l1...)
	res.Stalled = append(res.Stalled, stalled...)
	res.Violations = append(res.Violations, checkLockFaultsHit(run)...)
	for _, f := range run.Faults {
		if f.Kind == LockFaultLateUnlock && f.Status == 0 {
			res.Violations = append(res.Violations, Violation{Invariant: "LS1", At: f.At, Workers: []string{f.Client},
				Message: fmt.Sprintf("%s: a late unlock with %s's ended term %d was answered 0 (released)", f.Resource, f.Client, f.Term)})
		}
	}
	return res
}

// lockHoldings builds every belief from the lines: from a got's answer to
// its valid_until (the request's send + expiry − margin), moved by each renewed, cut by unlocked or lost (their sends),
// or by the client's kill.
func lockHoldings(run LockRun) []holding {
	killed := map[string]time.Time{}
	for _, f := range run.Faults {
		if f.Kind == LockFaultKillClient {
			killed[f.Client] = f.At
		}
	}
	open := map[string]*holding{} // by client
	var out []*holding
	for _, l := range sortedLines(run.Lines) {
		h := open[l.Client]
		switch {
		case l.Ev == "got":
			start := l.T
			if l.Done.After(start) {
				start = l.Done
			}
			h = &holding{client: l.Client, resource: l.Resource, term: l.Term, sent: l.T, start: start, end: l.ValidUntil, ended: "deadline"}
			open[l.Client] = h
			out = append(out, h)
		case h == nil || l.Term != h.term || l.Resource != h.resource:
		case l.Ev == "renewed" && l.ValidUntil.After(h.end):
			h.end = l.ValidUntil
		case l.Ev == "unlocked" || l.Ev == "lost":
			if l.T.Before(h.end) {
				h.end = l.T
			}
			h.ended = l.Ev
			delete(open, l.Client)
		}
	}
	hs := make([]holding, 0, len(out))
	for _, h := range out {
		if k, ok := killed[h.client]; ok && k.Before(h.end) && !k.Before(h.start) {
			h.end, h.ended = k, "killed"
		}
		hs = append(hs, *h)
	}
	return hs
}

func sortedLines(ls []LockLine) []LockLine {
	out := append([]LockLine(nil), ls...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

// checkLockS1: two holdings of one resource by different clients never
// overlap — except after a forced loss (its lock blob deleted while held),
// where the earlier holder may believe until it next renews: the deletion +
// RenewEvery + 2 request timeouts + 1 s. That exemption excuses two
// holders at once, so it takes no stall (stall.go).
func checkLockS1(r string, h []holding, faults []LockFault, p LockParams) []Violation {
	var vs []Violation
	for i := range h {
		for j := i + 1; j < len(h) && h[j].start.Before(h[i].end); j++ {
			a, b := h[i], h[j]
			if a.client == b.client {
				continue
			}
			if forced, until := lockForcedLoss(r, a, faults, p); forced && !a.end.After(until) {
				continue
			}
			vs = append(vs, Violation{Invariant: "LS1", At: b.start, Workers: []string{a.client, b.client},
				Message: fmt.Sprintf("%s: %s (term %d) believed it held until %s while %s (term %d) held it from %s",
					r, a.client, a.term, a.end.Format(time.RFC3339Nano), b.client, b.term, b.start.Format(time.RFC3339Nano))})
		}
	}
	return vs
}

// lockForcedLoss reports whether r's lock blob was deleted during holding
// a, and until when a may then still believe. Storage granted a somewhere
// between its request's send and its answer, so a deletion in that span
// may have destroyed its lease too.
func lockForcedLoss(r string, a holding, faults []LockFault, p LockParams) (bool, time.Time) {
	for _, f := range faults {
		if f.Kind == LockFaultDeleteBlob && f.Resource == r && !f.At.Before(a.sent) && f.At.Before(a.end) {
			return true, f.At.Add(p.RenewEvery + 2*p.RequestTimeout + time.Second)
		}
	}
	return false, time.Time{}
}

// checkLockTerms: a resource's terms strictly increase from one holding to
// the next, and no term is granted twice.
func checkLockTerms(r string, h []holding) []Violation {
	var vs []Violation
	for i := 1; i < len(h); i++ {
		if h[i].term <= h[i-1].term {
			vs = append(vs, Violation{Invariant: "LS2", At: h[i].start, Workers: []string{h[i-1].client, h[i].client},
				Message: fmt.Sprintf("%s: term %d (%s) after term %d (%s): terms must strictly increase", r, h[i].term, h[i].client, h[i-1].term, h[i-1].client)})
		}
	}
	return vs
}

// checkLockLedger: r's ledger has seq 1, 2, … without a gap, terms that
// never go back (two holders' writes never interleave under different
// terms), and each entry is a write a client logged ("wrote", same seq, term
// and holder) sent within a holding of that term.
func checkLockLedger(r string, h []holding, run LockRun) []Violation {
	var vs []Violation
	type key struct {
		client string
		term   int64
	}
	granted := map[key]holding{}
	for _, x := range h {
		granted[key{x.client, x.term}] = x
	}
	wrote := map[int64]LockLine{}
	for _, l := range run.Lines {
		if l.Ev == "wrote" && l.Resource == r {
			wrote[l.Seq] = l
		}
	}
	es := run.Ledgers[r]
	for i, e := range es {
		switch {
		case e.Seq != int64(i+1):
			vs = append(vs, Violation{Invariant: "LS2", At: e.At, Message: fmt.Sprintf("%s: ledger entry %d has seq %d: a gap or a repeat", r, i+1, e.Seq)})
		case i > 0 && e.Term < es[i-1].Term:
			vs = append(vs, Violation{Invariant: "LS2", At: e.At, Workers: []string{es[i-1].Holder, e.Holder},
				Message: fmt.Sprintf("%s: ledger seq %d by %s under term %d after seq %d by %s under term %d: interleaved writes", r, e.Seq, e.Holder, e.Term, es[i-1].Seq, es[i-1].Holder, es[i-1].Term)})
		}
		g, ok := granted[key{e.Holder, e.Term}]
		w, logged := wrote[e.Seq]
		switch {
		case !ok:
			vs = append(vs, Violation{Invariant: "LS2", At: e.At, Workers: []string{e.Holder},
				Message: fmt.Sprintf("%s: ledger seq %d by %s under term %d, a term it was never granted", r, e.Seq, e.Holder, e.Term)})
		case logged && (w.Client != e.Holder || w.Term != e.Term):
			vs = append(vs, Violation{Invariant: "LS2", At: e.At, Workers: []string{e.Holder, w.Client},
				Message: fmt.Sprintf("%s: ledger seq %d is %s's term %d, but %s logged it as its write under term %d", r, e.Seq, e.Holder, e.Term, w.Client, w.Term)})
		case logged && (w.T.Before(g.start) || !w.T.Before(g.end)):
			vs = append(vs, Violation{Invariant: "LS1", At: w.T, Workers: []string{e.Holder},
				Message: fmt.Sprintf("%s: %s sent its write seq %d outside its holding of term %d [%s, %s)", r, e.Holder, e.Seq, e.Term, g.start.Format(time.RFC3339Nano), g.end.Format(time.RFC3339Nano))})
		}
	}
	inLedger := map[int64]bool{}
	for _, e := range es {
		inLedger[e.Seq] = true
	}
	for seq, w := range wrote {
		if !inLedger[seq] {
			vs = append(vs, Violation{Invariant: "LS2", At: w.T, Workers: []string{w.Client},
				Message: fmt.Sprintf("%s: %s logged write seq %d under term %d, which the ledger does not hold", r, w.Client, seq, w.Term)})
		}
	}
	return vs
}

// checkLockL1: after a holder is killed, its lock is held by another client
// within the end of its lease at storage + 1.1·P + request timeout + 1 s.
// The lease ends expiry after storage granted or last renewed it, which was
// before the answer came (leaseEnd), however long the request waited — not
// at the end of the holder's belief (its send + expiry − Margin), which a
// request that waited left seconds earlier. The rule needs a client waiting
// across the lease's end (the scenario keeps one): without one it tested no
// poll, an evidence violation. When storage granted the lease is known
// only to lie between the request's send and its answer, so its end lies
// in [leaseEarliestEnd, leaseEnd]: a waiter is a request in flight at the
// latest end, or one sent by the earliest and answered no sooner than the
// take, when the take came before the latest end (under load, a handover
// seconds before it). A run that ended before that bound is a
// violation of evidence, never a pass. A take late by no more than the
// stall measured from the lease's end to it is inconclusive (stall.go),
// returned apart from the violations.
func checkLockL1(byRes map[string][]holding, run LockRun, p LockParams) (vs, stalled []Violation) {
	c := &checker{run: Run{Sched: run.Sched}}
	if ls := sortedLines(run.Lines); len(ls) > 0 {
		c.start = ls[0].T // times in the stall's note count from the first line
	}
	for _, f := range run.Faults {
		if f.Kind != LockFaultKillClient || f.Resource == "" {
			continue
		}
		var dead *holding
		for _, h := range byRes[f.Resource] {
			if h.client == f.Client && h.ended == "killed" {
				dead = &h
			}
		}
		if dead == nil {
			vs = append(vs, Violation{Invariant: "evidence", At: f.At, Message: fmt.Sprintf("%s: %s was killed holding it, but no line of its shows the holding", f.Resource, f.Client)})
			continue
		}
		end := leaseEnd(run.Lines, *dead, p)
		bound := end.Add(time.Duration(1.1*float64(p.RetryPeriod)) + p.RequestTimeout + time.Second)
		next := nextHolding(byRes[f.Resource], f)
		switch {
		case next == nil && run.End.Before(bound):
			vs = append(vs, Violation{Invariant: "evidence", At: f.At, Message: fmt.Sprintf("%s: the run ended before the bound %s after %s's kill", f.Resource, bound.Format(time.RFC3339Nano), f.Client)})
		case !waitingAcross(run.Lines, f.Resource, f.Client, end, end, run.End) &&
			!waitingAcross(run.Lines, f.Resource, f.Client, leaseEarliestEnd(run.Lines, *dead, p), takeOrEnd(next, end), run.End):
			vs = append(vs, Violation{Invariant: "evidence", At: end, Message: fmt.Sprintf("%s: no client was waiting for %s's lock when its lease ended (%s): LL1 tested no waiting request",
				f.Resource, f.Client, end.Format(time.RFC3339Nano))})
		case next == nil || next.start.After(bound):
			got := run.End
			if next != nil {
				got = next.start
			}
			c.overrun("LL1", placed(end, f.Client), timing{From: end, Due: bound, Got: got}, nil,
				"%s: killed holder %s's lock (lease at storage to %s at the latest) not taken by %s", f.Resource, f.Client, end.Format(time.RFC3339Nano), bound.Format(time.RFC3339Nano))
		}
	}
	return append(vs, c.violations...), c.stalled
}

// leaseEnd is the latest instant storage's lease of holding h can end: the
// expiry it was granted or last renewed with (its line's belief + Margin −
// send), counted from that request's answer, before which storage acted.
func leaseEnd(lines []LockLine, h holding, p LockParams) time.Time {
	var end time.Time
	for _, l := range lines {
		if l.Client != h.client || l.Resource != h.resource || l.Term != h.term || (l.Ev != "got" && l.Ev != "renewed") {
			continue
		}
		answered := l.T
		if l.Done.After(answered) {
			answered = l.Done
		}
		if e := answered.Add(l.ValidUntil.Add(p.Margin).Sub(l.T)); e.After(end) {
			end = e
		}
	}
	return end
}

// nextHolding is the first holding of a resource (sorted by start) by
// another client after kill f.
func nextHolding(hs []holding, f LockFault) *holding {
	for i := range hs {
		if hs[i].start.After(f.At) && hs[i].client != f.Client {
			return &hs[i]
		}
	}
	return nil
}

// leaseEarliestEnd is the earliest instant storage's lease of holding h
// can end: the expiry it was granted or last renewed with, counted from
// that request's send, after which storage acted.
func leaseEarliestEnd(lines []LockLine, h holding, p LockParams) time.Time {
	var end time.Time
	for _, l := range lines {
		if l.Client != h.client || l.Resource != h.resource || l.Term != h.term || (l.Ev != "got" && l.Ev != "renewed") {
			continue
		}
		if e := l.ValidUntil.Add(p.Margin); e.After(end) {
			end = e
		}
	}
	return end
}

// takeOrEnd is when a waiter had waited long enough: the next holding's
// start when it came before the lease's latest end, else that end.
func takeOrEnd(next *holding, end time.Time) time.Time {
	if next != nil && next.start.Before(end) {
		return next.start
	}
	return end
}

// waitingAcross reports whether a client other than but was waiting for
// resource r from instant from to instant until: a lock request of its
// sent by from and answered (got, denied, or failed) no sooner than until,
// or not answered before the run's end.
func waitingAcross(lines []LockLine, r, but string, from, until, runEnd time.Time) bool {
	for _, l := range lines {
		if l.Resource != r || l.Client == but || (l.Ev != "got" && l.Ev != "denied" && l.Ev != "lock_error") || l.T.After(from) {
			continue
		}
		answered := l.Done
		if answered.IsZero() {
			answered = runEnd // an old line without its answer's time: assume it waited
		}
		if !answered.Before(until) {
			return true
		}
	}
	return false
}

// checkLockFaultsHit: a replica's kill and slow storage change no bound,
// but a run in which no client met them did not test them.
func checkLockFaultsHit(run LockRun) []Violation {
	var vs []Violation
	for _, f := range run.Faults {
		if f.Kind != LockFaultKillReplica && f.Kind != LockFaultSlowStorage {
			continue
		}
		hit := false
		for _, l := range run.Lines {
			switch f.Kind {
			case LockFaultKillReplica:
				hit = hit || l.Ev == "replica_failed" && l.T.Before(f.At) && !l.Done.Before(f.At)
			case LockFaultSlowStorage:
				hit = hit || (l.Ev == "got" || l.Ev == "renewed") && !l.T.Before(f.At) && l.T.Before(f.Until)
			}
		}
		if !hit {
			vs = append(vs, Violation{Invariant: "evidence", At: f.At, Message: fmt.Sprintf("%s at %s: no client line shows it hit a request", f.Kind, f.At.Format(time.RFC3339Nano))})
		}
	}
	return vs
}

// LockHandover is how long after a killed holder's lease ended at storage
// (leaseEnd) its lock was taken again, per kill (for reports).
func LockHandover(run LockRun, p LockParams) []time.Duration {
	var out []time.Duration
	byRes := map[string][]holding{}
	for _, h := range lockHoldings(run) {
		byRes[h.resource] = append(byRes[h.resource], h)
	}
	for _, hs := range byRes {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
	}
	for _, f := range run.Faults {
		if f.Kind != LockFaultKillClient || f.Resource == "" {
			continue
		}
		for _, h := range byRes[f.Resource] {
			if h.client == f.Client && h.ended == "killed" {
				if next := nextHolding(byRes[f.Resource], f); next != nil {
					out = append(out, next.start.Sub(leaseEnd(run.Lines, h, p)))
				}
				break
			}
		}
	}
	return out
}
