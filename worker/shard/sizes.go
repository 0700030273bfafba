package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/internal/setupconflict"
)

// Pools of different sizes (docs/architecture.md#conflicting-set-ups). All
// workers of a pool must run with the same N. Every member writes its pool's
// mode, Mode(N), into its member record (and every shard lock's); the
// leader's listing shows them at no extra cost, and a member whose lease is
// held while its record says another N is reported once it has shown so for
// setupconflict.After, as the election does (a member of an earlier size that is gone
// loses its lease within L).

// Mode is the election mode of a pool of n shards ("shards=8"): the
// binary's election lock and every member and shard record carry it.
func Mode(n int) string { return "shards=" + strconv.Itoa(n) }

// checkSizes compares the pool size of every live member with ours and
// reports (log once per L, Healthy, Conflict) those that differ for longer
// than setupconflict.After.
func (co *coordinator) checkSizes(st poolState, now time.Time) {
	w := co.w
	mine := Mode(w.cfg.Shards)
	var odd []string
	for m, mode := range st.MemberModes {
		if !st.Members[m] || mode == mine {
			delete(co.odd, m)
			continue
		}
		since, ok := co.odd[m]
		if !ok {
			co.odd[m] = now
			continue
		}
		if now.Sub(since) >= conflictAfter(w.cfg.Election) {
			odd = append(odd, fmt.Sprintf("%s (%s)", strconv.Quote(m), mode))
		}
	}
	for m := range co.odd {
		if !st.Members[m] {
			delete(co.odd, m)
		}
	}
	slices.Sort(odd)
	reason := ""
	if len(odd) > 0 {
		reason = fmt.Sprintf("set-up conflict (shards): members %s run a pool of another size than this leader's %s: every worker of a pool must run the same --shards",
			strings.Join(odd, ", "), mine)
	}
	w.mu.Lock()
	tell := reason != "" && (reason != w.conflict || now.Sub(w.toldAt) >= w.cfg.Election.LeaseDuration)
	w.conflict = reason
	if tell {
		w.toldAt = now
	}
	w.mu.Unlock()
	if !tell {
		return
	}
	for m, mode := range st.MemberModes {
		if since, ok := co.odd[m]; ok && now.Sub(since) >= conflictAfter(w.cfg.Election) {
			w.log.Warn("conflicting set-up", "event", setupconflict.LogEvent, "kind", "shards", "holder", m,
				"holder_mode", mode, "mode", mine, "term", co.term, "reason", reason)
		}
	}
}

// Conflict says how this worker's set-up conflicts with another's: as
// the pool's leader, members of another size; the member lease or a shard
// lease held under our identity by another process, or by a contender of
// another mode. Empty when none.
func (w *Worker) Conflict() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	if w.conflict != "" {
		out = append(out, w.conflict)
	}
	if w.member != nil {
		if c := w.member.Status().Conflict; c != "" {
			out = append(out, "member lease: "+c)
		}
	}
	for _, r := range w.runs {
		if c := r.el.Status().Conflict; c != "" {
			out = append(out, fmt.Sprintf("shard %d: %s", r.n, c))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// conflictAfter is how long a pool-size conflict must last before it is
// reported: as long as the election's own conflicts (setupconflict.After).
func conflictAfter(c election.Config) time.Duration {
	return setupconflict.After(c.LeaseDuration, c.RetryPeriod, c.RequestTimeout())
}
