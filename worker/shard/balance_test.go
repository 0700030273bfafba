package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", i+1)
	}
	return out
}

// settled returns the assignment a leader would publish once every owner
// holds its shards: plan from nothing, then again with holders = owners.
func settled(t *testing.T, n int, members []string) *Assignment {
	t.Helper()
	owners, _ := plan(facts{n: n, active: members, holder: make([]string, n)})
	a := &Assignment{Shards: n, Members: members, Owners: owners}
	owners, standbys := plan(facts{n: n, active: members, holder: owners, intent: a})
	return &Assignment{Shards: n, Members: members, Owners: owners, Standbys: standbys}
}

func assertBalanced(t *testing.T, n int, members, owners []string) {
	t.Helper()
	q := n / len(members)
	c := map[string]int{}
	for s, o := range owners {
		if o == "" {
			t.Fatalf("shard %d has no owner: %v", s, owners)
		}
		if !slices.Contains(members, o) {
			t.Fatalf("shard %d given to %s, not a member of %v", s, o, members)
		}
		c[o]++
	}
	for _, m := range members {
		if c[m] != q && c[m] != q+1 {
			t.Fatalf("expected every member to own %d or %d of %d shards, %s owns %d: %v", q, q+1, n, m, c[m], c)
		}
	}
}

func moves(before, after []string) int {
	k := 0
	for s := range before {
		if before[s] != "" && before[s] != after[s] {
			k++
		}
	}
	return k
}

// minMoves is the fewest shards that must change owner to go from `before`
// to some balanced assignment over members: give the ⌈N/M⌉ targets to the
// members that have the most.
func minMoves(n int, before []string, members []string) int {
	c := map[string]int{}
	for _, o := range before {
		if o != "" {
			c[o]++
		}
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b string) int { return c[b] - c[a] })
	q, r := n/len(ms), n%len(ms)
	keep := 0
	for i, m := range ms {
		tgt := q
		if i < r {
			tgt++
		}
		keep += min(c[m], tgt)
	}
	assigned := 0
	for _, o := range before {
		if o != "" {
			assigned++
		}
	}
	return assigned - keep
}

func TestPlan_Balanced(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{1, 1}, {1, 3}, {3, 3}, {16, 3}, {16, 5}, {7, 2}, {256, 10}, {1024, 7}} {
		t.Run(fmt.Sprintf("N%d_M%d", tc.n, tc.m), func(t *testing.T) {
			a := settled(t, tc.n, names(tc.m))
			assertBalanced(t, tc.n, a.Members, a.Owners)
			for s, sb := range a.Standbys {
				if tc.m > 1 && (sb == "" || sb == a.Owners[s]) {
					t.Fatalf("shard %d (owner %s) has standby %q; want another member", s, a.Owners[s], sb)
				}
				if tc.m == 1 && sb != "" {
					t.Fatalf("a single member has no standby, shard %d has %q", s, sb)
				}
			}
		})
	}
}

func TestPlan_Sticky(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		before []string // members of the settled assignment
		after  []string // members after the change
	}{
		{"join 3→4, N=16", 16, names(3), names(4)},
		{"join 1→2, N=8", 8, names(1), names(2)},
		{"join 9→10, N=256", 256, names(9), names(10)},
		{"join 3→4, N=17", 17, names(3), names(4)},
		{"join of two at once", 16, names(3), names(5)},
		{"leave 3→2, N=16", 16, names(3), names(2)},
		{"leave of the first, N=16", 16, names(3), names(3)[1:]},
		{"leave 10→9, N=256", 256, names(10), names(9)},
		{"same members (a leader change)", 16, names(3), names(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := settled(t, tc.n, tc.before)
			owners, _ := plan(facts{n: tc.n, active: tc.after, holder: a.Owners, intent: a})
			assertBalanced(t, tc.n, tc.after, owners)
			// Holders of departed members are not members: their shards are
			// free for the plan.
			before := slices.Clone(a.Owners)
			if got, want := moves(before, owners), minMoves(tc.n, before, tc.after); got != want {
				t.Fatalf("moved %d shards; balance requires %d (before %v, after %v)", got, want, before, owners)
			}
		})
	}
}

// A departure that the standbys absorbed leaves a balanced assignment: the
// next plan moves nothing more.
func TestPlan_StandbysAbsorbALeave(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{16, 3}, {16, 4}, {17, 5}, {256, 10}, {5, 2}} {
		for leaver := range tc.m {
			t.Run(fmt.Sprintf("N%d_M%d_w%d", tc.n, tc.m, leaver+1), func(t *testing.T) {
				members := names(tc.m)
				a := settled(t, tc.n, members)
				gone := members[leaver]
				holder := slices.Clone(a.Owners)
				for s, o := range holder {
					if o == gone {
						holder[s] = a.Standbys[s]
					}
				}
				rest := without(members, gone)
				assertBalanced(t, tc.n, rest, holder)
				owners, standbys := plan(facts{n: tc.n, active: rest, holder: holder, intent: a})
				if !slices.Equal(owners, holder) {
					t.Fatalf("after the standbys took %s's shards the plan moved more: holders %v, plan %v", gone, holder, owners)
				}
				for s, sb := range standbys {
					if len(rest) > 1 && (sb == "" || sb == owners[s]) {
						t.Fatalf("shard %d lacks a standby after the leave: %q", s, sb)
					}
				}
			})
		}
	}
}

// A new leader that sees the published assignment and the same holders
// publishes the same plan, and so does a leader in the middle of a move.
func TestPlan_AdoptsThePublishedPlan(t *testing.T) {
	n := 16
	a := settled(t, n, names(3))
	owners, standbys := plan(facts{n: n, active: names(3), holder: a.Owners, intent: a})
	if !slices.Equal(owners, a.Owners) || !slices.Equal(standbys, a.Standbys) {
		t.Fatalf("same facts, different plan:\nowners   %v\nwas      %v\nstandbys %v\nwas      %v", owners, a.Owners, standbys, a.Standbys)
	}
	// A join, published; then each pass sees a few more moves completed.
	joined := names(4)
	next, _ := plan(facts{n: n, active: joined, holder: a.Owners, intent: a})
	pub := &Assignment{Shards: n, Members: joined, Owners: next, Standbys: make([]string, n)}
	holder := slices.Clone(a.Owners)
	for s := range n {
		if next[s] == holder[s] {
			continue
		}
		holder[s] = "" // released, not yet acquired
		got, _ := plan(facts{n: n, active: joined, holder: holder, intent: pub})
		if !slices.Equal(got, next) {
			t.Fatalf("mid-move (shard %d released) the plan changed:\n%v\nwas\n%v", s, got, next)
		}
		holder[s] = next[s]
		got, _ = plan(facts{n: n, active: joined, holder: holder, intent: pub})
		if !slices.Equal(got, next) {
			t.Fatalf("mid-move (shard %d acquired) the plan changed:\n%v\nwas\n%v", s, got, next)
		}
	}
}

// A member in its grace period (or suspect) keeps what it has and gets
// nothing more; with every member retained nothing is handed out.
func TestPlan_RetainedMembers(t *testing.T) {
	n := 16
	a := settled(t, n, names(3))
	// After an outage nobody holds anything and only w1 is back.
	owners, _ := plan(facts{n: n, active: []string{"w1"}, retained: []string{"w2", "w3"}, holder: make([]string, n), intent: a})
	if !slices.Equal(owners, a.Owners) {
		t.Fatalf("members in their grace period lost shards:\n%v\nwas\n%v", owners, a.Owners)
	}
	// w3 is suspect: its standby took shard s; nothing else moves to or from it.
	var s int
	for s = range n {
		if a.Owners[s] == "w3" {
			break
		}
	}
	holder := slices.Clone(a.Owners)
	holder[s] = a.Standbys[s]
	owners, _ = plan(facts{n: n, active: []string{"w1", "w2"}, retained: []string{"w3"}, holder: holder, intent: a})
	if !slices.Equal(owners, holder) {
		t.Fatalf("a takeover by the standby was not adopted as is:\n%v\nholders\n%v", owners, holder)
	}
}

// Random facts: the plan always gives every shard to a member and balances
// the active members whenever nobody is retained.
func TestPlan_RandomFacts(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for i := range 2000 {
		n := 1 + rng.IntN(40)
		all := names(1 + rng.IntN(6))
		active := slices.DeleteFunc(slices.Clone(all), func(string) bool { return rng.IntN(4) == 0 })
		if len(active) == 0 {
			active = all[:1]
		}
		holder := make([]string, n)
		intentOwners := make([]string, n)
		intentStandbys := make([]string, n)
		pool := append(names(8), "")
		for s := range n {
			holder[s] = pool[rng.IntN(len(pool))]
			intentOwners[s] = pool[rng.IntN(len(pool))]
			intentStandbys[s] = pool[rng.IntN(len(pool))]
		}
		// Holders must be distinct per shard only; any member may hold.
		f := facts{n: n, active: active, holder: holder, intent: &Assignment{Shards: n, Members: all, Owners: intentOwners, Standbys: intentStandbys}}
		owners, standbys := plan(f)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			assertBalanced(t, n, active, owners)
			for s := range n {
				if sb := standbys[s]; sb != "" && (sb == owners[s] || !slices.Contains(active, sb)) {
					t.Fatalf("shard %d: standby %q for owner %q (active %v)", s, sb, owners[s], active)
				}
			}
		})
	}
}

// When an owner's leases lapse (it crashed or is cut off) before the leader
// has dropped it from the membership, its shards keep their standbys: the
// standby takes each over as soon as storage expires the lease, within
// L + P·1.1 of the owner's last renew, instead of waiting for the leader to
// count the owner gone.
func TestPlan_StandbysStayWhileTheOwnersLeasesLapse(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{6, 3}, {16, 3}, {17, 5}} {
		t.Run(fmt.Sprintf("N%d_M%d", tc.n, tc.m), func(t *testing.T) {
			members := names(tc.m)
			a := settled(t, tc.n, members)
			gone := members[tc.m-1]
			holder := slices.Clone(a.Owners)
			for s, o := range holder {
				if o == gone {
					holder[s] = "" // its lease expired; nobody has taken it yet
				}
			}
			rest := without(members, gone)
			owners, standbys := plan(facts{n: tc.n, active: rest, retained: []string{gone}, holder: holder, intent: a})
			for s := range tc.n {
				if a.Owners[s] != gone {
					continue
				}
				if owners[s] != gone || standbys[s] != a.Standbys[s] {
					t.Fatalf("shard %d of lapsed %s: plan gives owner %q standby %q; expected owner %q and its standby %q kept", s, gone, owners[s], standbys[s], gone, a.Standbys[s])
				}
			}
		})
	}
}

func TestAssignment_OwnedAndStandingBy(t *testing.T) {
	a := &Assignment{Shards: 4, Members: []string{"w1", "w2"},
		Owners: []string{"w1", "w2", "w1", "w2"}, Standbys: []string{"w2", "w1", "", "w1"}}
	for _, tc := range []struct {
		name      string
		got, want []int
	}{
		{"w1 owns", a.Owned("w1"), []int{0, 2}},
		{"w2 owns", a.Owned("w2"), []int{1, 3}},
		{"w1 stands by", a.StandingBy("w1"), []int{1, 3}},
		{"w2 stands by", a.StandingBy("w2"), []int{0}},
		{"a stranger", a.StandingBy("w3"), nil},
		{"no assignment", (*Assignment)(nil).StandingBy("w1"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
