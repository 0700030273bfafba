package main

import (
	"fmt"
	"slices"
)

// overlapCheck looks for a shard owned by two workers at once in what the
// demo saw: a stream of /status answers, asked one worker at a time.
//
// Two answers from one sweep are not one instant: a shard can be released by
// A after A answered and acquired by B before B answered, and both answers
// are true. So an overlap counts only when it is bracketed: A said it owned
// shard s, then B said it owned s, then A — asked again after B answered,
// with no failed or skipped question to A in between — still said it owned
// s. A holds a shard over one unbroken interval between two answers a sweep
// apart (a move takes a drain of seconds, so A cannot give s away and win it
// back within one sweep), which puts B's ownership inside A's: both held s
// at the moment B answered.
type overlapCheck struct {
	seq      int64
	last     map[string]observation // per worker: its latest answer since its last gap
	overlaps []overlap              // every proof, in order
	distinct []overlap              // the first proof for each shard and pair of workers
	times    map[overlapKey]int
	answers  int64 // answers seen
	brackets int64 // (shard, other worker's claim) pairs a worker's two answers bracketed
}

type observation struct {
	seq    int64
	shards []int
}

type overlap struct {
	Shard int
	A, B  string // A answered before and after B, all three owning Shard
}

type overlapKey struct {
	shard int
	a, b  string // sorted
}

func (o overlap) key() overlapKey {
	k := overlapKey{o.Shard, o.A, o.B}
	if k.b < k.a {
		k.a, k.b = k.b, k.a
	}
	return k
}

// Times returns how often c proved the overlap o (either order of the pair).
func (c *overlapCheck) Times(o overlap) int { return c.times[o.key()] }

func (o overlap) String() string {
	return fmt.Sprintf("shard %d owned by %s and %s at once", o.Shard, o.A, o.B)
}

func newOverlapCheck() *overlapCheck {
	return &overlapCheck{last: map[string]observation{}, times: map[overlapKey]int{}}
}

// answered records that worker said it owns shards now (its answer arrived
// after every earlier call's answer). It returns the overlaps this answer
// proves for a shard and pair of workers not proved before; all are kept.
func (c *overlapCheck) answered(worker string, shards []int) []overlap {
	c.seq++
	c.answers++
	now := observation{seq: c.seq, shards: slices.Clone(shards)}
	prev, had := c.last[worker]
	c.last[worker] = now
	if !had {
		return nil
	}
	var found []overlap
	for _, s := range now.shards {
		if !slices.Contains(prev.shards, s) {
			continue // not held at both ends: nothing brackets
		}
		for other, ob := range c.last {
			if other == worker || ob.seq <= prev.seq {
				continue // not answered between worker's two answers
			}
			c.brackets++
			if slices.Contains(ob.shards, s) {
				found = append(found, overlap{Shard: s, A: worker, B: other})
			}
		}
	}
	c.overlaps = append(c.overlaps, found...)
	var fresh []overlap
	for _, o := range found {
		if c.times[o.key()]++; c.times[o.key()] == 1 {
			fresh = append(fresh, o)
		}
	}
	c.distinct = append(c.distinct, fresh...)
	return fresh
}

// gap records that worker did not answer (or was stopped or restarted): its
// next answer brackets nothing with the ones before.
func (c *overlapCheck) gap(worker string) { delete(c.last, worker) }
