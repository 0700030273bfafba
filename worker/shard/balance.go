package shard

import (
	"cmp"
	"slices"
)

// facts is what the leader knows at one pass: who may take shards, who keeps
// what it has but takes nothing more, who holds each shard's lease, and the
// assignment in force.
type facts struct {
	n int
	// active members are live in storage (their member lease is held) and
	// trusted: they may receive shards. Sorted.
	active []string
	// retained members are absent but within their grace period, or suspect
	// (a standby just took one of their shards): they keep what they hold or
	// are assigned, so a blip moves nothing, but they receive nothing.
	retained []string
	// holder is, per shard, the member whose lease on it storage shows
	// ("" when the lease is free or its holder is not a member).
	holder []string
	// intent is the assignment in force (nil before the first).
	intent *Assignment
}

// plan computes the next owners and standbys. It is a pure function of the
// facts, so a new leader that sees the same facts computes the same plan as
// the old one did (a leader change alone moves nothing).
//
// Rules, in order:
//  1. Facts beat intent: a shard whose lease a member holds stays with it;
//     a standby that took a shard over is its owner now.
//  2. Every member ends with ⌊N/M⌋ or ⌈N/M⌉ shards (M counts retained
//     members too, so a member in its grace period keeps its share).
//  3. Only what balance requires moves: a shard leaves a member only when
//     that member is above its target and an active member is below its
//     own; the ⌈N/M⌉ targets go to the members that already have the most
//     (or, with the membership unchanged, to those the intent gave them).
//  4. A shard held by its owner gets a standby (and keeps it while the
//     owner stays, even when the owner's lease lapses): the member that would
//     receive it if the owner left (the same rules run without the owner),
//     so a departure moves exactly the departed member's shards and the
//     result is balanced already.
func plan(f facts) (owners, standbys []string) {
	members := sortedUnion(f.active, f.retained)
	active := set(f.active)
	isMember := set(members)

	// Rule 1, the intent corrected by facts: a standby holding the shard took it
	// over from its owner.
	io := make([]string, f.n)
	base := make([]string, f.n)
	for s := range f.n {
		io[s] = f.intent.owner(s)
		h := f.holder[s]
		if h != "" && h == f.intent.standby(s) {
			io[s] = h
		}
		switch {
		case isMember[h]:
			base[s] = h
		case isMember[io[s]]:
			base[s] = io[s]
		case isMember[f.intent.standby(s)] && active[f.intent.standby(s)]:
			base[s] = f.intent.standby(s) // it is polling and will take the shard
		}
	}
	var favored map[string]bool
	if f.intent != nil && slices.Equal(f.intent.Members, members) {
		favored = map[string]bool{}
		q := f.n / max(len(members), 1)
		for m, c := range f.intent.Counts() {
			if c == q+1 {
				favored[m] = true
			}
		}
	}
	owners = place(f.n, members, active, base, io, favored)

	// Rule 4, standbys: for each owner, where its shards would go without it.
	standbys = make([]string, f.n)
	byOwner := map[string][]int{}
	for s, o := range owners {
		// A shard gets a standby once its owner holds it, and keeps it while
		// the owner stays: when the owner's lease lapses (a crash, a cut) the
		// standby must still be there to take it when storage expires it. A
		// shard still being moved to a new owner gets none, so nobody races
		// the new owner for it.
		kept := o == f.intent.owner(s) && f.intent.standby(s) != ""
		if o != "" && (f.holder[s] == o || kept) {
			byOwner[o] = append(byOwner[o], s)
		}
	}
	for o, shards := range byOwner {
		rest := without(members, o)
		if !anyOf(rest, active) {
			continue
		}
		b := slices.Clone(owners)
		prefer := slices.Clone(owners)
		for _, s := range shards {
			b[s] = ""
			prefer[s] = f.intent.standby(s) // keep standbys stable across passes
		}
		alt := place(f.n, rest, active, b, prefer, nil)
		for _, s := range shards {
			standbys[s] = alt[s]
		}
	}
	return owners, standbys
}

// place assigns every shard to a member: it keeps base where balance allows,
// gives free shards to active members (their intended owner first), and moves
// shards from members above their target to active members below theirs,
// preferring shards intended for the receiver. favored members get the
// ⌈N/M⌉ targets first.
func place(n int, members []string, active map[string]bool, base, intended []string, favored map[string]bool) []string {
	out := make([]string, n)
	if len(members) == 0 {
		return out
	}
	count := map[string]int{}
	for s, m := range base {
		if m != "" && slices.Contains(members, m) {
			out[s] = m
			count[m]++
		}
	}
	// Rule 2, targets: the ⌈N/M⌉ ones to the favored, then to the fullest.
	q, r := n/len(members), n%len(members)
	order := slices.Clone(members)
	slices.SortStableFunc(order, func(a, b string) int {
		if fa, fb := favored[a], favored[b]; fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	target := map[string]int{}
	for i, m := range order {
		target[m] = q
		if i < r {
			target[m] = q + 1
		}
	}
	deficit := func(m string) int { return target[m] - count[m] }
	// neediest is the active member furthest below its target (ties: name).
	neediest := func(mustNeed bool) string {
		best := ""
		for _, m := range members {
			if !active[m] || (mustNeed && deficit(m) <= 0) {
				continue
			}
			if best == "" || deficit(m) > deficit(best) {
				best = m
			}
		}
		return best
	}
	// 3a. Free shards: to their intended owner if it has room, else to the
	// neediest active member.
	for s := range n {
		if out[s] == "" {
			if m := intended[s]; active[m] && slices.Contains(members, m) && deficit(m) > 0 {
				out[s] = m
				count[m]++
			}
		}
	}
	for s := range n {
		if out[s] == "" {
			if m := neediest(false); m != "" {
				out[s] = m
				count[m]++
			}
		}
	}
	// 3b. Moves that balance requires: from the fullest member above target
	// to the neediest active member below target.
	for {
		to := neediest(true)
		from := ""
		for _, m := range members {
			if deficit(m) < 0 && (from == "" || deficit(m) < deficit(from)) {
				from = m
			}
		}
		if to == "" || from == "" {
			return out
		}
		pick, rank := -1, -1
		for s := n - 1; s >= 0; s-- {
			if out[s] != from {
				continue
			}
			r := 0
			switch intended[s] {
			case to:
				r = 2 // already meant for the receiver
			case from:
			default:
				r = 1 // meant for someone else anyway
			}
			if r > rank {
				pick, rank = s, r
			}
		}
		out[pick] = to
		count[from]--
		count[to]++
	}
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func sortedUnion(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func without(xs []string, x string) []string {
	return slices.DeleteFunc(slices.Clone(xs), func(y string) bool { return y == x })
}

func anyOf(xs []string, in map[string]bool) bool {
	for _, x := range xs {
		if in[x] {
			return true
		}
	}
	return false
}
