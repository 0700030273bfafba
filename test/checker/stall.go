package checker

import (
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// A busy machine is a fault nobody injected (docs/chaos.md#a-busy-machine).
// The harness measures it with a CPU probe beside every run (a thread that
// sleeps a short tick and records how late it woke: package
// worker/stalltest) and hands the record to the checker as Run.Sched.
//
// Timing bounds that assume the machine runs a process when it is due — a
// supervisor killing its command after a thaw, a reap, a follower's poll, a
// report — are judged as design bound + the stall the probe measured in
// that bound's own window. A miss no larger than that stall is
// inconclusive (Verdict.Stalled): the run proved nothing about the system,
// it is neither a pass nor a failure, and the harness retries it. A miss
// beyond the stall stays a violation. Safety rules — S1 and its forced-break
// exemption, S2, the ledger's fencing, the takeover rules, S1-commands,
// LS1/LS2 — never read the probe: two leaders on a slow machine are two
// leaders.

// Sched is the harness's CPU probe over one run.
type Sched struct {
	// Tick is the probe's sleep: it asks to wake every Tick.
	Tick time.Duration `json:"tick"`
	// Floor: a wake at least this late is recorded in Late; later ones
	// only are stalls, so every bound gets the stalls that reached Floor.
	Floor time.Duration `json:"floor"`
	// Wakes counts every wake measured, late or not.
	Wakes int `json:"wakes"`
	// Late are the wakes at least Floor late, oldest first (a probe keeps
	// a bounded number; the oldest dropped only make bounds stricter).
	Late []Wake `json:"late,omitzero"`
	// Storage are the stretches storage kept the harness's own storage
	// probe waiting past its floor (test/cluster's StorageProbe.Slow): a
	// starved emulator delays every storage step of a bound as a starved
	// process does. Counted with Late, overlaps once.
	Storage []Wake `json:"storage,omitzero"`
}

// Wake is one late wake of the probe: due at Due, running again at Woke.
// From Due to Woke a thread that was due did not run: the machine stalled.
type Wake = stalltest.Wake

// StallIn is how long the machine stalled in [from, to]: the time within
// it during which the CPU probe was due and did not run, or storage kept
// the storage probe waiting (clipped to the window, overlaps once). Zero
// without a probe.
func (s *Sched) StallIn(from, to time.Time) time.Duration {
	if s == nil {
		return 0
	}
	if len(s.Storage) == 0 {
		return stalltest.StallIn(s.Late, from, to)
	}
	return stalltest.StallIn(append(append([]Wake(nil), s.Late...), s.Storage...), from, to)
}

// StorageTotal is how long storage kept the harness's probe waiting past
// its floor over the whole record.
func (s *Sched) StorageTotal() time.Duration {
	if s == nil || len(s.Storage) == 0 {
		return 0
	}
	return stalltest.StallIn(s.Storage, s.Storage[0].Due, s.Storage[len(s.Storage)-1].Woke.Add(time.Nanosecond))
}

// Max is the latest wake, zero Wake when none was late.
func (s *Sched) Max() Wake {
	var m Wake
	if s == nil {
		return m
	}
	for _, w := range s.Late {
		if w.Late() > m.Late() {
			m = w
		}
	}
	return m
}

// Total is how long the machine stalled over the whole record.
func (s *Sched) Total() time.Duration {
	if s == nil {
		return 0
	}
	var sum time.Duration
	for _, w := range s.Late {
		sum += w.Late()
	}
	return sum
}

// timing is one timing bound being judged: the thing it bounds was due by
// Due and came at Got; the machine's stall is measured from From (the
// moment the bound counts from) to Got.
type timing struct {
	From, Due, Got time.Time
}

// miss is how late Got came (zero or less: in time).
func (b timing) miss() time.Duration { return b.Got.Sub(b.Due) }

// overrun judges a timing bound that was missed (Got after Due): a
// violation of inv when the miss is larger than the stall the probe
// measured in [From, Got] (its message then names that stall), else a
// stall-explained miss filed in Stalled. It returns whether the miss was
// explained.
func (c *checker) overrun(inv string, w where, b timing, evidence []Event, format string, args ...any) bool {
	miss, stall := b.miss(), c.run.Sched.StallIn(b.From, b.Got)
	explained := miss <= stall
	switch {
	case explained:
		format += fmt.Sprintf("; missed by %v, within the %v the machine stalled from %s to %s (CPU probe): inconclusive",
			miss.Round(time.Millisecond), stall.Round(time.Millisecond), c.rel(b.From), c.rel(b.Got))
	case stall > 0:
		format += fmt.Sprintf("; missed by %v, beyond the %v the machine stalled in that window (CPU probe)",
			miss.Round(time.Millisecond), stall.Round(time.Millisecond))
	}
	n := len(c.violations)
	c.report(inv, w, evidence, format, args...)
	v := &c.violations[n]
	v.Miss, v.Stall = miss, stall
	if explained {
		c.stalled = append(c.stalled, *v)
		c.violations = c.violations[:n]
	}
	return explained
}
