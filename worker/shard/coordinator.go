package shard

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/storage"
)

// coordinator is the leader's side of the pool for one term: every P it
// lists the pool, plans, and publishes the assignment when the plan changed
// (or was published under an older term); every SummaryEvery it aggregates
// the members' reports into the summary.
type coordinator struct {
	w        *Worker
	term     int64
	leading  func() bool
	started  time.Time
	intent   *Assignment // the assignment in force: last read or published
	doc      *fencedDoc  // the assignment blob
	sumDoc   *fencedDoc  // the summary blob
	absent   map[string]time.Time
	suspect  map[string]time.Time // member → until when it receives nothing
	lastSum  time.Time
	lastList poolState
	odd      map[string]time.Time // member of another pool size → first listing that showed it (sizes.go)
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
	}
	defer func() {
		w.mu.Lock()
		w.leading, w.summary, w.conflict = nil, nil, ""
		w.mu.Unlock()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		election.Heartbeat(ctx)
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

// call runs one storage step with the request timeout, then reports
// progress to the stall watchdog: a step that returned (answered, failed or
// timed out) is the coordinator making progress. A pass is many steps (the
// listing, the assignment, departed members' blobs, the summary), so a
// heartbeat once per pass would make leadership depend on the pool's size
// times storage latency (docs/architecture.md#shards).
func (co *coordinator) call(ctx context.Context, f func(context.Context) error) error {
	err := co.w.cfg.Election.WithinRequestTimeout(ctx, f)
	election.Heartbeat(ctx)
	return err
}

// maxReportReads bounds the report reads one summary keeps in flight.
const maxReportReads = 128

// readReports reads the reports of members, up to maxReportReads at once,
// each under its own request timeout and each reporting progress when it
// returns (call): a summary costs about ⌈members / maxReportReads⌉ round
// trips instead of one per member, and the watchdog sees progress all along
// at any pool size. It returns the reports it could read, in members' order;
// a report that is missing, unreadable or late is left out (the summary
// says whose it read).
func (co *coordinator) readReports(ctx context.Context, members []string) []memberReport {
	w := co.w
	reports := make([]Report, len(members))
	found := make([]bool, len(members))
	slots := make(chan struct{}, maxReportReads)
	var wg sync.WaitGroup
	for i, m := range members {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			_ = co.call(ctx, func(c context.Context) error {
				ok, err := readJSON(c, w.cfg.Container, w.layout.Report(m), "report_read", &reports[i])
				found[i] = ok && err == nil
				return err
			})
		})
	}
	wg.Wait()
	var out []memberReport
	for i, m := range members {
		if found[i] {
			out = append(out, memberReport{member: m, report: reports[i]})
		}
	}
	return out
}

// memberReport is one member's report as the summary read it.
type memberReport struct {
	member string
	report Report
}

// pass is one round of coordination.
func (co *coordinator) pass(ctx context.Context) error {
	w := co.w
	n := w.cfg.Shards
	// 1. One listing: members, shard leases and holders, documents.
	var st poolState
	if err := co.call(ctx, func(c context.Context) (err error) { st, err = listPool(c, w.cfg.Container, w.layout, n); return err }); err != nil {
		return err
	}
	co.lastList = st
	co.checkSizes(st, time.Now())
	// 2. Adopt the published assignment when it changed under us (or at
	// the start of our term): it is the intent we stay close to.
	if co.intent == nil || !co.doc.is(st.AssignmentETag) {
		if err := co.readIntent(ctx); err != nil {
			return err
		}
	}
	now := time.Now()
	f := co.facts(st, now)
	owners, standbys := plan(f)
	next := &Assignment{
		Term: co.term, Leader: w.cfg.Election.Identity, Shards: n,
		Members: sortedUnion(f.active, f.retained), Owners: owners, Standbys: standbys, Published: now.UTC(),
	}
	if co.intent != nil {
		next.Version = co.intent.Version
	}
	next.Version++
	// 3. Publish when the plan changed or our term has not stamped it yet.
	if len(next.Members) > 0 && (!next.samePlan(co.intent) || co.intent.Term < co.term) {
		if !co.leading() {
			return nil
		}
		err := co.call(ctx, func(c context.Context) error { return co.doc.write(c, co.term, next) })
		switch {
		case errors.Is(err, errConflict):
			return co.readIntent(ctx) // decide again next pass
		case err != nil:
			return err
		}
		co.intent = next
		w.mu.Lock()
		w.leading = next
		w.mu.Unlock()
		w.emit(Event{Kind: EventAssignmentPublished, Shard: -1, Term: co.term, Assignment: next, Reason: co.why(f)})
		w.log.Info("assignment published", "term", co.term, "version", next.Version, "members", strings.Join(next.Members, ","), "counts", countsText(next.Counts()))
	} else {
		w.mu.Lock()
		w.leading = co.intent
		w.mu.Unlock()
	}
	co.collect(ctx, st, now)
	if now.Sub(co.lastSum) >= w.cfg.SummaryEvery {
		co.lastSum = now
		if err := co.publishSummary(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (co *coordinator) readIntent(ctx context.Context) error {
	var a Assignment
	var term int64
	var found bool
	if err := co.call(ctx, func(c context.Context) (err error) { term, found, err = co.doc.read(c, &a); return err }); err != nil {
		return err
	}
	if !found {
		co.intent = nil
		return nil
	}
	if term > co.term || a.Term > co.term {
		return ErrDeposed
	}
	co.intent = &a
	return nil
}

// facts turns a listing into the planner's input: who is active, who is
// retained (absent within the grace, or suspect), who holds what.
func (co *coordinator) facts(st poolState, now time.Time) facts {
	w := co.w
	n := w.cfg.Shards
	present := map[string]bool{}
	for m, leased := range st.Members {
		if leased {
			present[m] = true
			delete(co.absent, m)
		}
	}
	// Members we count but no longer see: absent since now (or since our
	// term began, for those of the assignment we adopted).
	known := map[string]bool{}
	if co.intent != nil {
		for _, m := range co.intent.Members {
			known[m] = true
		}
	}
	for m := range co.absent {
		known[m] = true
	}
	// A standby holding a shard its owner was given took it over: the owner
	// has probably died (its member lease lapses within L). Give it nothing
	// new for a while.
	for s := range n {
		h, o := st.Shards[s].Holder, co.intent.owner(s)
		if st.Shards[s].Leased && h != "" && o != "" && h != o && h == co.intent.standby(s) {
			co.suspect[o] = now.Add(w.cfg.SuspectFor())
		}
	}
	var active, retained []string
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
		if now.Sub(since) < w.cfg.MemberGrace() {
			retained = append(retained, m)
		}
	}
	slices.Sort(active)
	slices.Sort(retained)
	members := set(append(slices.Clone(active), retained...))
	holder := make([]string, n)
	for s := range n {
		if sl := st.Shards[s]; sl.Leased && members[sl.Holder] {
			holder[s] = sl.Holder
		}
	}
	return facts{n: n, active: active, retained: retained, holder: holder, intent: co.intent}
}

// why explains a publication for the history.
func (co *coordinator) why(f facts) string {
	switch {
	case co.intent == nil:
		return "first assignment"
	case co.intent.Term < co.term:
		return "new term"
	case !slices.Equal(co.intent.Members, sortedUnion(f.active, f.retained)):
		return "membership changed"
	}
	return "holders changed"
}

// collect deletes the blobs of members gone for longer than the grace
// (their leases are free; a delete of a leased blob fails, so a member that
// came back in between keeps its blob).
func (co *coordinator) collect(ctx context.Context, st poolState, now time.Time) {
	w := co.w
	k := 0
	for m, since := range co.absent {
		if now.Sub(since) < w.cfg.MemberGrace() || st.Members[m] || k >= maxGCPerPass {
			continue
		}
		k++
		_ = co.call(ctx, func(c context.Context) error {
			_, err := w.cfg.Container.NewBlobClient(w.layout.Member(m)).Delete(storage.WithOp(c, "member_gc"), nil)
			return err
		})
		if st.Reports[m] {
			_ = co.call(ctx, func(c context.Context) error {
				_, err := w.cfg.Container.NewBlobClient(w.layout.Report(m)).Delete(storage.WithOp(c, "member_gc"), nil)
				return err
			})
		}
		delete(co.absent, m)
	}
}

// publishSummary aggregates the reports of the members it counts into the
// summary: per shard the holder and its shard term (from the listing) and
// the highest sequence any member reported for it.
func (co *coordinator) publishSummary(ctx context.Context, st poolState) error {
	w := co.w
	a := co.intent
	if a == nil || !co.leading() {
		return nil
	}
	sum := &Summary{Term: co.term, Leader: w.cfg.Election.Identity, Version: a.Version, At: time.Now().UTC(),
		Members: a.Members, Shards: make([]ShardSummary, w.cfg.Shards), ReportedBy: []string{}}
	for s := range sum.Shards {
		sl := st.Shards[s]
		sum.Shards[s] = ShardSummary{Shard: s, Term: sl.Term, Standby: a.standby(s)}
		if sl.Leased {
			sum.Shards[s].Owner = sl.Holder
		}
	}
	var members []string
	for _, m := range a.Members {
		if st.Reports[m] {
			members = append(members, m)
		}
	}
	for _, mr := range co.readReports(ctx, members) {
		sum.ReportedBy = append(sum.ReportedBy, mr.member)
		for _, p := range mr.report.Shards {
			if p.Shard >= 0 && p.Shard < len(sum.Shards) && p.Seq > sum.Shards[p.Shard].Progress {
				sum.Shards[p.Shard].Progress = p.Seq
			}
		}
	}
	err := co.call(ctx, func(c context.Context) error { return co.sumDoc.write(c, co.term, sum) })
	if errors.Is(err, errConflict) {
		// Re-read to learn the ETag (and whether a newer term holds it).
		var old Summary
		return co.call(ctx, func(c context.Context) error {
			term, _, err := co.sumDoc.read(c, &old)
			if err == nil && term > co.term {
				return ErrDeposed
			}
			return err
		})
	}
	if err == nil {
		co.w.mu.Lock()
		co.w.summary = sum
		co.w.mu.Unlock()
	}
	return err
}

// Summary returns the summary this worker last published while it leads.
func (w *Worker) Summary() *Summary {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.summary
}
