package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// maxReportReads bounds the report reads one summary keeps in flight.
const maxReportReads = 128

// reporters are the identities whose reports a summary reads: every member
// the listing shows with a report, and those of the assignment in force.
func reporters(st poolState, a *Assignment) []string {
	var out []string
	for m := range st.Reports {
		if _, member := st.Members[m]; member || (a != nil && set(a.Members)[m]) {
			out = append(out, m)
		}
	}
	return sortedUnion(out, nil)
}

// readReports reads the reports of members, up to maxReportReads at once,
// each under its own request timeout: a summary costs about ⌈members /
// maxReportReads⌉ round trips instead of one per member. It returns the
// reports it could read, in members' order; a report that is missing, late
// or not valid is left out (the summary says whose it read; one not valid is
// reported once). Each report's newest assignment raises the version the
// next publication starts above.
func (co *coordinator) readReports(ctx context.Context, members []string) []memberReport {
	w := co.w
	reports := make([]Report, len(members))
	errs := make([]error, len(members))
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
			errs[i] = co.call(ctx, func(c context.Context) error {
				ok, err := readJSON(c, w.cfg.Container, w.layout.Report(m), "report_read", &reports[i])
				found[i] = ok && err == nil
				return err
			})
		})
	}
	wg.Wait()
	var out []memberReport
	for i, m := range members {
		if errors.Is(errs[i], errMalformed) && co.badSeen[m] != errs[i].Error() {
			co.badSeen[m] = errs[i].Error()
			w.log.Warn("ignoring a member's report that is not valid; the member writes it again", "member", m, "err", errs[i])
		}
		if !found[i] {
			continue
		}
		if r := reports[i].Assignment; r != nil && r.Term > co.term {
			// A member follows only assignments the lock's record confirms:
			// a report of a later one carries a planted term.
			if why := fmt.Sprintf("assignment term %d above the lock's (%d)", r.Term, co.term); co.badSeen[m] != why {
				co.badSeen[m] = why
				w.log.Warn("ignoring the assignment a member's report names: its term is above the lock's", "member", m, "term_found", r.Term, "term", co.term)
			}
			reports[i].Assignment = nil
		}
		out = append(out, memberReport{member: m, report: reports[i]})
		if r := reports[i].Assignment; r != nil {
			co.noteVersion(r.Version)
		}
	}
	return out
}

// memberReport is one member's report as the summary read it.
type memberReport struct {
	member string
	report Report
}

// publishSummary aggregates the reports of the members the assignment in
// force counts into the summary: per shard the holder and its shard term
// (from the listing) and the highest sequence any member reported for it.
// A summary someone else overwrote with one that is not valid is ours to
// write again (conditioned on the ETag we read).
func (co *coordinator) publishSummary(ctx context.Context, st poolState, reports []memberReport) error {
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
	counted := set(a.Members)
	for _, mr := range reports {
		if !counted[mr.member] {
			continue
		}
		sum.ReportedBy = append(sum.ReportedBy, mr.member)
		for _, p := range mr.report.Shards {
			if p.Shard >= 0 && p.Shard < len(sum.Shards) && p.Seq > sum.Shards[p.Shard].Progress {
				sum.Shards[p.Shard].Progress = p.Seq
			}
		}
	}
	write := func() error {
		return co.call(ctx, func(c context.Context) error { return co.sumDoc.write(c, co.term, sum) })
	}
	err := write()
	if errors.Is(err, errConflict) {
		err = co.rereadSummary(ctx)
	}
	var above *termAbove
	switch {
	case errors.As(err, &above):
		if err = co.outranked(ctx, ObjectSummary, above.found); err == nil {
			co.summaryRepaired(CauseTermAboveLock, fmt.Sprintf("the summary carries term %d, above the lock's (%d, ours): a planted term, not a newer leader's", above.found, co.term), above.found)
			err = write()
		}
	case errors.Is(err, errMalformed):
		co.summaryRepaired(CauseNotValid, err.Error(), 0)
		err = write()
	}
	if err == nil {
		w.mu.Lock()
		w.summary = sum
		w.mu.Unlock()
		election.Progress(ctx)
	}
	return err
}

// rereadSummary reads the summary back after a conflict: to learn its ETag,
// and whether it holds a term above ours (*termAbove, in its metadata or
// its JSON) or is not valid (errMalformed); either way the ETag is known
// for the overwrite.
func (co *coordinator) rereadSummary(ctx context.Context) error {
	var old Summary
	return co.call(ctx, func(c context.Context) error {
		term, found, err := co.sumDoc.read(c, &old)
		if above := max(term, old.Term); found && above > co.term {
			return &termAbove{doc: ObjectSummary, found: above, ours: co.term}
		}
		return err
	})
}

// summaryRepaired reports a summary about to be written again over one
// gone bad: a log line naming any term found, and OnRepair.
func (co *coordinator) summaryRepaired(cause, why string, termFound int64) {
	args := []any{"term", co.term, "cause", cause, "why", why}
	if termFound != 0 {
		args = append(args, "term_found", termFound)
	}
	co.w.log.Warn("the published summary needs repair; writing ours again", args...)
	co.w.repaired(ObjectSummary, cause)
}

// Summary returns the summary this worker last published while it leads.
func (w *Worker) Summary() *Summary {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.summary
}
