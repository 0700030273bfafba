package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/shard"
)

// The shard view (demo --shards N): who owns which shard now, as each worker's
// /status says (`shards`: the shard leases it holds at the moment of asking),
// beside what the leader's assignment says (`assignment`: owner and standby
// per shard). Every refresh is one sweep: each worker asked in turn.

// shardTimings are the pool's bounds at the workers' default timings (the
// demo starts them with no timing flags).
var shardTimings = shard.Config{Election: election.DefaultConfig("demo")}

// sweep is one round of /status answers.
type sweep struct {
	at         time.Time
	answers    map[string]status // by identity; a worker that did not answer is absent
	leader     string            // the one worker that says it leads, or ""
	assignment *shard.Assignment // the leader's, if one answered with it
	owners     [][]string        // per shard: the workers that said they own it
}

// departure is a worker the demo killed or stopped, with the shards it owned
// at its last answer, until live workers own all of them again.
type departure struct {
	worker  string
	how     string // "killed (SIGKILL)", "stopped (SIGTERM)"
	at      time.Time
	shards  []int
	takenBy map[int]string        // shard → the live worker that owns it now
	after   map[int]time.Duration // shard → how long after `at` it was first seen owned
}

func (p *departure) done() bool { return len(p.takenBy) == len(p.shards) }

// sweep asks every worker in turn and feeds the answers to the overlap check
// and to the departures waiting for their shards to be owned again.
func (d *demo) sweep() sweep {
	sw := sweep{at: time.Now(), answers: map[string]status{}, owners: make([][]string, d.shards)}
	leaders := 0
	for _, w := range d.workers {
		s, ok := d.status(w)
		if !ok {
			d.overlaps.gap(w.id)
			continue
		}
		for _, o := range d.overlaps.answered(w.id, s.Shards) {
			d.note("OVERLAP: %s", o)
		}
		sw.answers[w.id] = s
		d.lastOwned[w.id] = s.Shards
		for _, n := range s.Shards {
			if n >= 0 && n < d.shards {
				sw.owners[n] = append(sw.owners[n], w.id)
			}
		}
		if s.Role == "leader" {
			leaders++
			sw.leader, sw.assignment = w.id, s.Assignment
		}
	}
	if leaders != 1 {
		sw.leader, sw.assignment = "", nil
	}
	for n, o := range sw.owners {
		switch {
		case len(o) == 0 && d.freeSince[n].IsZero():
			d.freeSince[n] = sw.at
		case len(o) > 0:
			d.freeSince[n] = time.Time{}
		}
	}
	d.followDepartures(sw)
	return sw
}

// followDepartures notes, per departed worker, when each of its shards is
// first seen owned by another worker, and when all of them are.
func (d *demo) followDepartures(sw sweep) {
	var open []*departure
	for _, p := range d.departures {
		for _, n := range p.shards {
			if _, ok := p.takenBy[n]; ok {
				continue
			}
			for _, o := range sw.owners[n] {
				if o != p.worker {
					p.takenBy[n], p.after[n] = o, sw.at.Sub(p.at)
					d.note("shard %d: %s owns it, %.1fs after %s was %s", n, o, p.after[n].Seconds(), p.worker, p.how)
					break
				}
			}
		}
		if p.done() {
			d.note("all %d shards of %s owned again by live workers, %.1fs after it was %s", len(p.shards), p.worker, sw.at.Sub(p.at).Seconds(), p.how)
			continue
		}
		open = append(open, p)
	}
	d.departures = open
}

// depart records that w was just killed or stopped, with the shards it owned
// at its last answer.
func (d *demo) depart(w *worker, how string, at time.Time) *departure {
	d.overlaps.gap(w.id)
	p := &departure{worker: w.id, how: how, at: at, shards: slices.Clone(d.lastOwned[w.id]),
		takenBy: map[int]string{}, after: map[int]time.Duration{}}
	delete(d.lastOwned, w.id)
	if len(p.shards) > 0 {
		d.departures = append(d.departures, p)
	}
	return p
}

// balanced reports whether sw shows a settled pool: one leader whose
// assignment counts exactly the workers that answered, every shard owned by
// exactly its assigned owner and given a standby, and every worker owning
// ⌊N/M⌋ or ⌈N/M⌉ shards.
func (d *demo) balanced(sw sweep) bool {
	a := sw.assignment
	if a == nil || len(a.Owners) != d.shards || len(a.Standbys) != d.shards || len(sw.answers) == 0 {
		return false
	}
	var live []string
	for id := range sw.answers {
		live = append(live, id)
	}
	slices.Sort(live)
	if !slices.Equal(live, a.Members) {
		return false
	}
	for n, o := range sw.owners {
		if len(o) != 1 || o[0] != a.Owners[n] || a.Standbys[n] == "" || a.Standbys[n] == o[0] {
			return false
		}
	}
	lo := d.shards / len(live)
	hi := lo
	if d.shards%len(live) != 0 {
		hi++
	}
	for _, s := range sw.answers {
		if len(s.Shards) < lo || len(s.Shards) > hi {
			return false
		}
	}
	return true
}

func shardList(shards []int) string {
	if len(shards) == 0 {
		return "-"
	}
	parts := make([]string, len(shards))
	for i, n := range shards {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, " ")
}

// shardTable renders sw: the workers (what each owns now and stands by for),
// then one row per shard (owner now, the leader's owner and standby).
func (d *demo) shardTable(sw sweep, tty bool) string {
	var b strings.Builder
	if tty {
		b.WriteString("\033[H\033[2J")
	}
	fmt.Fprintf(&b, "blobleader demo — %d workers, %d shards on Azurite %s   (lease 15s, poll 1s)\r\n\r\n", len(d.workers), d.shards, d.az.BlobEndpoint())
	fmt.Fprintf(&b, "  %-10s %-7s %-10s %-14s %-24s %s\r\n", "IDENTITY", "PID", "ROLE", "TERM", "OWNS NOW (/status)", "STANDBY FOR")
	for _, w := range d.workers {
		s, ok := sw.answers[w.id]
		switch {
		case ok:
			role := fmt.Sprintf("%-10s", s.Role)
			if tty && s.Role == "leader" {
				role = "\033[1;32m" + role + "\033[0m"
			}
			fmt.Fprintf(&b, "  %-10s %-7d %s %-14d %-24s %s\r\n", w.id, w.cmd.Process.Pid, role, s.Term,
				fmt.Sprintf("%s (%d)", shardList(s.Shards), len(s.Shards)), shardList(sw.assignment.StandingBy(w.id)))
		case w.alive() && !d.paused[w].IsZero():
			fmt.Fprintf(&b, "  %-10s %-7d %s\r\n", w.id, w.cmd.Process.Pid, fmt.Sprintf("paused (SIGSTOP), wakes in %.0fs", time.Until(d.paused[w]).Seconds()))
		case w.alive():
			fmt.Fprintf(&b, "  %-10s %-7d %-10s\r\n", w.id, w.cmd.Process.Pid, "starting")
		default:
			fmt.Fprintf(&b, "  %-10s %-7s %-10s\r\n", w.id, "-", w.how)
		}
	}
	b.WriteString("\r\n")
	if a := sw.assignment; a != nil {
		fmt.Fprintf(&b, "  leader %s's assignment: term %d, version %d, members %s\r\n", a.Leader, a.Term, a.Version, strings.Join(a.Members, " "))
	} else {
		b.WriteString("  no assignment from a single leader right now\r\n")
	}
	fmt.Fprintf(&b, "  %5s  %-22s %-12s %s\r\n", "SHARD", "OWNER NOW", "ASSIGNED TO", "STANDBY")
	for n, o := range sw.owners {
		owner := strings.Join(o, "+")
		switch {
		case len(o) == 0:
			owner = fmt.Sprintf("- (unclaimed %.1fs)", sw.at.Sub(d.freeSince[n]).Seconds())
		case len(o) > 1:
			owner += " (moving)" // both answered owning it; an overlap only if bracketed (overlap.go)
		}
		assigned, standby := "-", "-"
		if a := sw.assignment; a != nil && n < len(a.Owners) && n < len(a.Standbys) {
			assigned, standby = or(a.Owners[n], "-"), or(a.Standbys[n], "-")
		}
		fmt.Fprintf(&b, "  %5d  %-22s %-12s %s\r\n", n, owner, assigned, standby)
	}
	b.WriteString("\r\n")
	d.mu.Lock()
	for _, l := range d.log {
		if tty && strings.Contains(l, "OVERLAP") {
			l = "\033[1;31m" + l + "\033[0m"
		}
		b.WriteString("  " + l + "\r\n")
	}
	d.mu.Unlock()
	b.WriteString("\r\n  f kill a follower (its shards go to their standbys after the lease expires, ~16s)   g stop a follower (graceful: ~1s)\r\n")
	b.WriteString("  p pause a follower for 20s (SIGSTOP: it wakes without its shards)   k kill the leader   s stop the leader\r\n")
	b.WriteString("  n start a new worker   r restart stopped workers   q quit\r\n")
	return b.String()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
