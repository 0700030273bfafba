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
	intended, base := f.corrected(members, active)
	owners = place(f.n, members, active, base, intended, f.favored(members))
	return owners, f.standbys(members, active, owners)
}

// corrected is rule 1, the intent corrected by facts: intended is, per
// shard, the owner the intent names, or the standby that holds the shard
// (it took it over from its owner); base is the member that keeps it — its
// holder, else its intended owner, else its standby while that one is
// active (it is polling and will take the shard) — or "" for none.
func (f facts) corrected(members []string, active map[string]bool) (intended, base []string) {
	isMember := set(members)
	intended = make([]string, f.n)
	base = make([]string, f.n)
	for s := range f.n {
		intended[s] = f.intent.owner(s)
		h, sb := f.holder[s], f.intent.standby(s)
		if h != "" && h == sb {
			intended[s] = h
		}
		switch {
		case isMember[h]:
			base[s] = h
		case isMember[intended[s]]:
			base[s] = intended[s]
		case isMember[sb] && active[sb]:
			base[s] = sb
		}
	}
	return intended, base
}

// favored are the members the intent gave ⌈N/M⌉ shards, when the
// membership is unchanged: they keep the larger targets (rule 3). nil when
// the membership changed or there is no intent.
func (f facts) favored(members []string) map[string]bool {
	if f.intent == nil || !slices.Equal(f.intent.Members, members) {
		return nil
	}
	favored := map[string]bool{}
	q := f.n / max(len(members), 1)
	for m, c := range f.intent.Counts() {
		if c == q+1 {
			favored[m] = true
		}
	}
	return favored
}

// standbys is rule 4: for each owner, where its shards would go without it.
func (f facts) standbys(members []string, active map[string]bool, owners []string) []string {
	standbys := make([]string, f.n)
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
	return standbys
}

// place assigns every shard to a member: it keeps base where balance allows,
// gives free shards to active members (their intended owner first), and moves
// shards from members above their target to active members below theirs,
// preferring shards intended for the receiver. favored members get the
// ⌈N/M⌉ targets first.
func place(n int, members []string, active map[string]bool, base, intended []string, favored map[string]bool) []string {
	if len(members) == 0 {
		return make([]string, n)
	}
	p := &placement{members: members, active: active, intended: intended, out: make([]string, n), count: map[string]int{}}
	p.keep(base)
	p.setTargets(favored)
	p.giveFree()
	p.balance()
	return p.out
}

// placement is one run of place: the owner of each shard so far, how many
// shards each member has, and how many it should end with.
type placement struct {
	members  []string
	active   map[string]bool
	intended []string // per shard, the member it is meant for
	out      []string // per shard, its owner so far ("" free)
	count    map[string]int
	target   map[string]int
}

// keep starts from base: each shard stays with its member, if a member.
func (p *placement) keep(base []string) {
	for s, m := range base {
		if m != "" && slices.Contains(p.members, m) {
			p.give(s, m)
		}
	}
}

// setTargets is rule 2: every member's target is ⌊N/M⌋, and the ⌈N/M⌉
// ones go to the favored, then to the fullest (ties: name).
func (p *placement) setTargets(favored map[string]bool) {
	n := len(p.out)
	q, r := n/len(p.members), n%len(p.members)
	order := slices.Clone(p.members)
	slices.SortStableFunc(order, func(a, b string) int {
		if fa, fb := favored[a], favored[b]; fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(p.count[b], p.count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	p.target = map[string]int{}
	for i, m := range order {
		p.target[m] = q
		if i < r {
			p.target[m] = q + 1
		}
	}
}

// giveFree is rule 3a: each free shard goes to its intended owner if that
// one is active and has room, else to the neediest active member.
func (p *placement) giveFree() {
	for s, m := range p.out {
		if i := p.intended[s]; m == "" && p.active[i] && slices.Contains(p.members, i) && p.deficit(i) > 0 {
			p.give(s, i)
		}
	}
	for s, m := range p.out {
		if m != "" {
			continue
		}
		if to := p.neediest(false); to != "" {
			p.give(s, to)
		}
	}
}

// balance is rule 3b: the moves balance requires, each from the fullest
// member above its target to the neediest active member below its own.
func (p *placement) balance() {
	for {
		to, from := p.neediest(true), p.fullest()
		if to == "" || from == "" {
			return
		}
		s := p.pick(from, to)
		p.count[from]--
		p.give(s, to)
	}
}

func (p *placement) give(s int, m string) {
	p.out[s] = m
	p.count[m]++
}

func (p *placement) deficit(m string) int { return p.target[m] - p.count[m] }

// neediest is the active member furthest below its target (ties: name);
// with mustNeed, only one that is below it. "" for none.
func (p *placement) neediest(mustNeed bool) string {
	best := ""
	for _, m := range p.members {
		if !p.active[m] || (mustNeed && p.deficit(m) <= 0) {
			continue
		}
		if best == "" || p.deficit(m) > p.deficit(best) {
			best = m
		}
	}
	return best
}

// fullest is the member furthest above its target (ties: name); "" for none.
func (p *placement) fullest() string {
	from := ""
	for _, m := range p.members {
		if p.deficit(m) < 0 && (from == "" || p.deficit(m) < p.deficit(from)) {
			from = m
		}
	}
	return from
}

// pick is the shard to move from one member to another: one meant for the
// receiver, else one meant for someone else anyway, else any (the highest
// numbered among equals).
func (p *placement) pick(from, to string) int {
	pick, rank := -1, -1
	for s := len(p.out) - 1; s >= 0; s-- {
		if p.out[s] != from {
			continue
		}
		r := 0
		switch p.intended[s] {
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
	return pick
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
