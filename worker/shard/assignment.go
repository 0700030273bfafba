package shard

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Assignment is what the leader publishes: for every shard its owner and its
// standby, computed for the members it saw live. It is written under the
// leader's fencing term (see fencedBlob) and ordered by (Term, Version): a
// worker ignores any assignment below the highest it has seen.
type Assignment struct {
	Term      int64     `json:"term"`      // the publishing leader's election term
	Version   int64     `json:"version"`   // increases with every publication, across terms
	Leader    string    `json:"leader"`    // the publishing leader's identity
	Shards    int       `json:"shards"`    // N
	Members   []string  `json:"members"`   // the members the leader counted, sorted
	Owners    []string  `json:"owners"`    // per shard: the member that should hold it ("" if none)
	Standbys  []string  `json:"standbys"`  // per shard: who takes it if its owner's lease lapses ("" if none)
	Published time.Time `json:"published"` // leader's wall clock, for people
}

// validate checks the rules an assignment read from storage must keep
// before anyone follows it.
func (a *Assignment) validate() error {
	switch {
	case a.Term <= 0:
		return fmt.Errorf("term %d is not positive", a.Term)
	case a.Version <= 0 || a.Version > lease.MaxTerm:
		return fmt.Errorf("version %d is not between 1 and %d", a.Version, int64(lease.MaxTerm))
	case a.Shards < 1 || a.Shards > MaxShards:
		return fmt.Errorf("shards %d is not between 1 and %d", a.Shards, MaxShards)
	case len(a.Owners) != a.Shards || len(a.Standbys) != a.Shards:
		return fmt.Errorf("%d owners and %d standbys for %d shards", len(a.Owners), len(a.Standbys), a.Shards)
	}
	members := set(a.Members)
	for s := range a.Shards {
		for _, m := range []string{a.Owners[s], a.Standbys[s]} {
			if m != "" && !members[m] {
				return fmt.Errorf("shard %d names %q, who is not a member", s, m)
			}
		}
	}
	return nil
}

// newer reports whether a orders after b (a nil b is older than anything).
func (a *Assignment) newer(b *Assignment) bool {
	if b == nil {
		return a != nil
	}
	if a == nil {
		return false
	}
	if a.Term != b.Term {
		return a.Term > b.Term
	}
	return a.Version > b.Version
}

// samePlan reports whether a and b assign the same owners and standbys to the
// same members (term, version and time aside).
func (a *Assignment) samePlan(b *Assignment) bool {
	return a != nil && b != nil && a.Shards == b.Shards && slices.Equal(a.Members, b.Members) &&
		slices.Equal(a.Owners, b.Owners) && slices.Equal(a.Standbys, b.Standbys)
}

// Owned returns the shards the assignment gives to identity, ascending.
func (a *Assignment) Owned(identity string) []int {
	if a == nil {
		return nil
	}
	return shardsOf(a.Owners, identity)
}

// StandingBy returns the shards the assignment names identity the standby
// of, ascending.
func (a *Assignment) StandingBy(identity string) []int {
	if a == nil {
		return nil
	}
	return shardsOf(a.Standbys, identity)
}

// shardsOf returns the shards (indexes of byShard) that name identity.
func shardsOf(byShard []string, identity string) []int {
	var out []int
	for s, id := range byShard {
		if id == identity {
			out = append(out, s)
		}
	}
	return out
}

// Counts returns how many shards each member owns in the assignment.
func (a *Assignment) Counts() map[string]int {
	out := map[string]int{}
	if a == nil {
		return out
	}
	for _, m := range a.Members {
		out[m] = 0
	}
	for _, o := range a.Owners {
		if o != "" {
			out[o]++
		}
	}
	return out
}

// countsText is counts for a person: "w1=3 w2=3 w3=2", by member name.
func countsText(counts map[string]int) string {
	names := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(names))
	for i, m := range names {
		parts[i] = fmt.Sprintf("%s=%d", m, counts[m])
	}
	return strings.Join(parts, " ")
}

func (a *Assignment) owner(s int) string {
	if a == nil || s < 0 || s >= len(a.Owners) {
		return ""
	}
	return a.Owners[s]
}

func (a *Assignment) standby(s int) string {
	if a == nil || s < 0 || s >= len(a.Standbys) {
		return ""
	}
	return a.Standbys[s]
}
