package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/storage"
)

// coordinator is the leader's side of the pool for one term: every P it
// lists the pool, plans, and publishes the assignment when the plan changed
// (or was published under an older term, or the published one needs
// repair); every SummaryEvery it aggregates the members' reports into the
// summary.
//
// It reports progress to the stall watchdog for work that landed, not for
// passes that turned (docs/architecture.md#shards): a pass whose listing
// shows the assignment in force is ours and still the plan (confirmed), a
// publication, a summary published.
type coordinator struct {
	w        *Worker
	term     int64
	leading  func() bool
	started  time.Time
	intent   *Assignment // the assignment in force: last read or published
	highest  int64       // the highest assignment version read, published or reported seen
	repair   string      // why the published assignment must be written again ("" if not)
	doc      *fencedDoc  // the assignment blob
	sumDoc   *fencedDoc  // the summary blob
	absent   map[string]time.Time
	suspect  map[string]time.Time // member → until when it receives nothing
	lastSum  time.Time
	lastList poolState
	odd      map[string]time.Time // member of another pool size → first listing that showed it (sizes.go)
	unowned  time.Time            // since when some assigned shard has had no lease held (zero: none)
	badSeen  map[string]string    // member → the last report of its we reported ignoring
}

// maxGCPerPass bounds the deletes of departed members' blobs in one pass.
const maxGCPerPass = 8

// Lead is the leader task for the election term `term`: it coordinates the
// pool until ctx ends. leading is the election's IsLeader: nothing is
// published once it says false, even before the elector notices. It returns
// ErrDeposed when a newer leader has published (the elector then hands
// leadership on).
func (w *Worker) Lead(ctx context.Context, term int64, leading func() bool) error {
	co := &coordinator{
		w: w, term: term, leading: leading, started: time.Now(),
		doc:     newFencedDoc(w.cfg.Container, w.layout.Assignment(), "assignment"),
		sumDoc:  newFencedDoc(w.cfg.Container, w.layout.Summary(), "summary"),
		absent:  map[string]time.Time{},
		suspect: map[string]time.Time{},
		odd:     map[string]time.Time{},
		badSeen: map[string]string{},
	}
	w.noteLockTerm(term) // the elector stamped it into the lock's record
	defer func() {
		w.mu.Lock()
		w.leading, w.summary, w.conflict, w.unowned = nil, nil, "", unownedShards{}
		w.mu.Unlock()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if err := co.pass(ctx); errors.Is(err, ErrDeposed) {
			w.log.Warn("a newer leader has published; handing leadership on", "term", term, "err", err)
			return err
		} else if err != nil && ctx.Err() == nil {
			w.log.Warn("coordination pass failed", "term", term, "err", err)
		}
		timer.Reset(w.cfg.Election.JitteredRetryPeriod())
	}
}

// call runs one storage step with the request timeout.
func (co *coordinator) call(ctx context.Context, f func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, co.w.cfg.Election.RequestTimeout())
	defer cancel()
	return f(rctx)
}

// pass is one round of coordination.
func (co *coordinator) pass(ctx context.Context) error {
	w := co.w
	// 1. One listing: members, shard leases and holders, documents.
	var st poolState
	if err := co.call(ctx, func(c context.Context) (err error) {
		st, err = listPool(c, w.cfg.Container, w.layout, w.cfg.Shards)
		return err
	}); err != nil {
		return err
	}
	co.lastList = st
	co.checkSizes(st, time.Now())
	// 2. Adopt the published assignment when it changed under us (or at
	// the start of our term): it is the intent we stay close to — unless it
	// is gone, older than ours, or not valid, which we repair.
	if co.intent == nil || !co.doc.is(st.AssignmentETag) {
		if err := co.readIntent(ctx); err != nil {
			return err
		}
	}
	// 3. The members' reports, when a summary is due: they also say the
	// newest assignment each has seen.
	now := time.Now()
	var reports []memberReport
	summaryDue := now.Sub(co.lastSum) >= w.cfg.SummaryEvery
	if summaryDue {
		co.lastSum = now
		reports = co.readReports(ctx, reporters(st, co.intent))
		if co.intent == nil && co.highest > 0 {
			co.needRepair(CauseMissing, fmt.Sprintf("the assignment is missing; members have seen version %d", co.highest), 0)
		}
	}
	// 4. Publish when the plan changed, our term has not stamped it yet, or
	// the published one needs repair; otherwise it is confirmed.
	if err := co.publishOrConfirm(ctx, st, now); err != nil {
		return err
	}
	co.countUnowned(st, now)
	if summaryDue {
		if err := co.publishSummary(ctx, st, reports); err != nil {
			return err
		}
	}
	co.collect(ctx, st, now)
	return nil
}

// publishOrConfirm plans from the listing and publishes the plan when it
// differs from the assignment in force, that one is of an older term, or
// it needs repair; with nothing to publish and our assignment confirmed by
// the listing, that is progress too.
func (co *coordinator) publishOrConfirm(ctx context.Context, st poolState, now time.Time) error {
	w := co.w
	f := co.facts(st, now)
	owners, standbys := plan(f)
	next := &Assignment{
		Term: co.term, Leader: w.cfg.Election.Identity, Shards: w.cfg.Shards,
		Members: sortedUnion(f.active, f.retained), Owners: owners, Standbys: standbys, Published: now.UTC(),
	}
	next.Version = co.highest + 1
	if len(next.Members) == 0 || (co.repair == "" && next.samePlan(co.intent) && co.intent.Term == co.term) {
		w.mu.Lock()
		w.leading = co.intent
		w.mu.Unlock()
		if co.intent != nil && co.intent.Term == co.term && co.doc.is(st.AssignmentETag) {
			election.Progress(ctx) // the pool follows our assignment, and it is still the plan
		}
		return nil
	}
	if !co.leading() {
		return nil
	}
	err := co.call(ctx, func(c context.Context) error { return co.doc.write(c, co.term, next) })
	var above *termAbove
	switch {
	case errors.As(err, &above):
		// Written over since we read it, with a term above ours: deposed,
		// or a planted term to repair at the next pass.
		if err := co.outranked(ctx, ObjectAssignment, above.found); err != nil {
			return err
		}
		co.needRepair(CauseTermAboveLock, fmt.Sprintf("the assignment was overwritten with term %d, above the lock's (%d, ours): a planted term, not a newer leader's", above.found, co.term), above.found)
		return nil
	case errors.Is(err, errConflict):
		return co.readIntent(ctx) // decide again next pass
	case err != nil:
		return err
	}
	why := co.why(f)
	co.intent, co.highest, co.repair = next, next.Version, ""
	w.mu.Lock()
	w.leading = next
	w.mu.Unlock()
	election.Progress(ctx)
	w.emit(Event{Kind: EventAssignmentPublished, Shard: -1, Term: co.term, Assignment: next, Reason: why})
	w.log.Info("assignment published", "term", co.term, "version", next.Version, "members", strings.Join(next.Members, ","), "counts", countsText(next.Counts()), "reason", why)
	return nil
}

// readIntent reads the published assignment and decides what is in force.
// The document is validated, never trusted (docs/architecture.md#shards):
// one of a newer term deposes us; one that is missing while we had one,
// older than the assignment this term has published, or not valid, is this
// coordinator's to repair — the next publication
// writes the assignment in force again, numbered above every version read,
// published or reported seen, so no member that saw a later one ignores it.
func (co *coordinator) readIntent(ctx context.Context) error {
	var a Assignment
	var term int64
	var found bool
	err := co.call(ctx, func(c context.Context) (err error) { term, found, err = co.doc.read(c, &a); return err })
	if err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	if above := max(term, a.Term); found && above > co.term {
		// A term above ours, in the metadata or the JSON: only the lock's
		// record can say whether a newer leader wrote it.
		if err := co.outranked(ctx, ObjectAssignment, above); err != nil {
			return err
		}
		co.needRepair(CauseTermAboveLock, fmt.Sprintf("the assignment carries term %d, above the lock's (%d, ours): a planted term, not a newer leader's", above, co.term), above)
		return nil
	}
	switch {
	case err != nil: // errMalformed
		co.needRepair(CauseNotValid, err.Error(), 0)
		return nil
	case !found:
		if co.intent != nil {
			co.needRepair(CauseMissing, "the assignment is missing", 0)
		}
		return nil
	}
	co.noteVersion(a.Version)
	if co.intent != nil && co.intent.Term == co.term && co.intent.newer(&a) {
		co.needRepair(CauseRolledBack, fmt.Sprintf("the assignment went back to version %d of term %d (ours: version %d)", a.Version, a.Term, co.intent.Version), 0)
		return nil
	}
	co.intent = &a
	return nil
}

// needRepair marks the published assignment for repair, reporting it (a
// log line naming any term found, OnRepair) once until it is repaired.
func (co *coordinator) needRepair(cause, why string, termFound int64) {
	if co.repair == "" {
		args := []any{"term", co.term, "cause", cause, "why", why}
		if termFound != 0 {
			args = append(args, "term_found", termFound)
		}
		co.w.log.Warn("the published assignment needs repair; writing ours again above every version seen", args...)
		co.w.repaired(ObjectAssignment, cause)
	}
	co.repair = why
}

// noteVersion raises the highest assignment version known.
func (co *coordinator) noteVersion(v int64) { co.highest = max(co.highest, v) }

// facts turns a listing into the planner's input: who is active, who is
// retained (absent within the grace, or suspect), who holds what.
func (co *coordinator) facts(st poolState, now time.Time) facts {
	n := co.w.cfg.Shards
	present := co.present(st)
	co.suspectTakenOver(st, now)
	active, retained := co.sortMembers(present, now)
	members := set(append(slices.Clone(active), retained...))
	holder := make([]string, n)
	for s := range n {
		if sl := st.Shards[s]; sl.Leased && members[sl.Holder] {
			holder[s] = sl.Holder
		}
	}
	return facts{n: n, active: active, retained: retained, holder: holder, intent: co.intent}
}

// present is the members whose member lease the listing shows held; they
// are no longer absent.
func (co *coordinator) present(st poolState) map[string]bool {
	present := map[string]bool{}
	for m, leased := range st.Members {
		if leased {
			present[m] = true
			delete(co.absent, m)
		}
	}
	return present
}

// suspectTakenOver marks the owner of every shard its standby holds: the
// standby took it over, so the owner has probably died (its member lease
// lapses within L). It is given nothing new for a while.
func (co *coordinator) suspectTakenOver(st poolState, now time.Time) {
	for s := range co.w.cfg.Shards {
		h, o := st.Shards[s].Holder, co.intent.owner(s)
		if st.Shards[s].Leased && h != "" && o != "" && h != o && h == co.intent.standby(s) {
			co.suspect[o] = now.Add(co.w.cfg.suspectFor())
		}
	}
}

// sortMembers splits the members into active (present and not suspect)
// and retained (present but suspect, or absent within their grace), each
// sorted. The members counted but no longer seen are those of the
// assignment we adopted and those already absent; each is absent since the
// first pass that missed it.
func (co *coordinator) sortMembers(present map[string]bool, now time.Time) (active, retained []string) {
	known := map[string]bool{}
	if co.intent != nil {
		for _, m := range co.intent.Members {
			known[m] = true
		}
	}
	for m := range co.absent {
		known[m] = true
	}
	for m := range present {
		if until, ok := co.suspect[m]; ok && now.Before(until) {
			retained = append(retained, m)
			continue
		}
		delete(co.suspect, m)
		active = append(active, m)
	}
	for m := range known {
		if present[m] {
			continue
		}
		since, ok := co.absent[m]
		if !ok {
			since = now
			co.absent[m] = now
		}
		if now.Sub(since) < co.w.cfg.memberGrace() {
			retained = append(retained, m)
		}
	}
	slices.Sort(active)
	slices.Sort(retained)
	return active, retained
}

// why explains a publication for the history.
func (co *coordinator) why(f facts) string {
	switch {
	case co.repair != "":
		return "repair: " + co.repair
	case co.intent == nil:
		return "first assignment"
	case co.intent.Term < co.term:
		return "new term"
	case !slices.Equal(co.intent.Members, sortedUnion(f.active, f.retained)):
		return "membership changed"
	}
	return "holders changed"
}

// countUnowned records, as this leader's listing shows it, how many shards
// the assignment in force gives an owner while no lease on them is held,
// and since when there have been such shards without a break.
func (co *coordinator) countUnowned(st poolState, now time.Time) {
	n := 0
	for s := range co.w.cfg.Shards {
		if co.intent.owner(s) != "" && !st.Shards[s].Leased {
			n++
		}
	}
	switch {
	case n == 0:
		co.unowned = time.Time{}
	case co.unowned.IsZero():
		co.unowned = now
	}
	co.w.mu.Lock()
	co.w.unowned = unownedShards{count: n, since: co.unowned, leading: true}
	co.w.mu.Unlock()
}

// collect deletes the blobs of members gone for longer than the grace
// (their leases are free; a delete of a leased blob fails, so a member that
// came back in between keeps its blob), all at once under one request
// timeout.
func (co *coordinator) collect(ctx context.Context, st poolState, now time.Time) {
	w := co.w
	var names []string
	for m, since := range co.absent {
		if now.Sub(since) < w.cfg.memberGrace() || st.Members[m] || len(names) >= 2*maxGCPerPass {
			continue
		}
		names = append(names, w.layout.Member(m))
		if st.Reports[m] {
			names = append(names, w.layout.Report(m))
		}
		delete(co.absent, m)
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			_ = co.call(ctx, func(c context.Context) error {
				_, err := w.cfg.Container.NewBlobClient(name).Delete(storage.WithOp(c, "member_gc"), nil)
				return err
			})
		})
	}
	wg.Wait()
}
