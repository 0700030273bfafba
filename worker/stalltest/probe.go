// Package stalltest measures how promptly this machine runs a thread that
// is due — a CPU probe — and, given a server's URL, how promptly that
// server answers — a storage probe — so that a test can judge a timing
// bound as its design bound plus the stall the machine showed, and tell a
// slow machine from a slow system (docs/chaos.md#a-busy-machine).
//
// One thread, locked to itself, sleeps Tick at a time in the kernel and
// records how late it woke: from its due time to its wake it was runnable
// and not run, and so, on a machine shared with CPU hogs, builds and
// emulators, was any process due then. A miss of a timing bound no larger
// than the stall measured in the bound's own window proves nothing either
// way: Probe.Bound calls it inconclusive, and Run runs such a test again.
// Only timing bounds may read the probe; a safety property holds however
// slow the machine is.
//
// Stdlib only; usable by library users' own tests, like azuritetest.
package stalltest

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config sets a probe's rhythm; the zero value is Default.
type Config struct {
	Tick  time.Duration // one sleep
	Floor time.Duration // a wake this late or later is recorded
	Keep  int           // late wakes kept (the latest), and as many slow answers
	// Server, when set, is a URL the probe also asks, one GET at a time
	// (storage.go): an answer slower than StorageFloor counts as a stall.
	// Tests against a shared Azurite set its blob endpoint.
	Server string
}

// Default: a 10 ms sleep, wakes 1 ms late or later recorded, the latest
// 65536 of them (at one late wake a tick, 11 minutes).
var Default = Config{Tick: 10 * time.Millisecond, Floor: time.Millisecond, Keep: 1 << 16}

// Wake is one wake of the probe at least Floor late: due at Due, running
// again at Woke.
type Wake struct {
	Due  time.Time `json:"due"`
	Woke time.Time `json:"woke"`
}

// Late is how late it woke.
func (w Wake) Late() time.Duration { return w.Woke.Sub(w.Due) }

// StallIn is how long the machine stalled in [from, to] by the late wakes
// given: the time within the window covered by at least one of them (each
// clipped to the window; wakes of several probes — a CPU probe's and a
// storage probe's slow answers — may overlap and count once). Zero for an
// empty window.
func StallIn(late []Wake, from, to time.Time) time.Duration {
	if !to.After(from) {
		return 0
	}
	var in []Wake
	for _, w := range late {
		if w.Due.Before(from) {
			w.Due = from
		}
		if w.Woke.After(to) {
			w.Woke = to
		}
		if w.Woke.After(w.Due) {
			in = append(in, w)
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Due.Before(in[j].Due) })
	var sum time.Duration
	var end time.Time // the end of what is counted so far
	for _, w := range in {
		if w.Due.Before(end) {
			w.Due = end
		}
		if w.Woke.After(w.Due) {
			sum += w.Woke.Sub(w.Due)
			end = w.Woke
		}
	}
	return sum
}

// Probe is a running CPU probe, and storage probe when Config.Server is set.
type Probe struct {
	cfg   Config
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	quit  context.CancelFunc // ends the storage probe
	asked chan struct{}      // closed when the storage probe ended

	mu           sync.Mutex
	started      time.Time
	ring         []Wake
	next         int
	late, wakes  uint64
	total        time.Duration // the recorded lateness, summed
	max          Wake
	underRun     bool          // Bound ends an inconclusive attempt instead of failing
	inconclusive string        // Bound's stall-explained miss, for Run
	stall        time.Duration // and the stall that explained it

	// The storage probe's record (storage.go).
	asks      uint64
	slow      []Wake        // answers slower than StorageFloor, as stalls
	slowNext  int           // the ring's oldest once full
	slowTotal time.Duration // the slow answers' time past the floor, summed
	asking    time.Time     // when the ask awaited now was sent; zero: none
}

// Start starts a probe; Stop ends it.
func Start(cfg Config) *Probe {
	if cfg.Tick <= 0 {
		cfg.Tick = Default.Tick
	}
	if cfg.Floor <= 0 {
		cfg.Floor = Default.Floor
	}
	if cfg.Keep <= 0 {
		cfg.Keep = Default.Keep
	}
	p := &Probe{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), started: time.Now(), ring: make([]Wake, 0, min(cfg.Keep, 1024)),
		asked: make(chan struct{})}
	go p.loop()
	ctx, quit := context.WithCancel(context.Background())
	p.quit = quit
	if cfg.Server == "" {
		close(p.asked)
	} else {
		go p.askLoop(ctx)
	}
	return p
}

// Stop ends the probe and waits for its thread. Safe to call twice.
func (p *Probe) Stop() {
	p.once.Do(func() { close(p.stop); p.quit() })
	<-p.done
	<-p.asked
}

func (p *Probe) loop() {
	defer close(p.done)
	// Its own OS thread, asleep in the kernel: what wakes it is the
	// kernel's scheduler, as for any process's timer.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		due := time.Now().Add(p.cfg.Tick)
		sleep(p.cfg.Tick)
		p.add(due, time.Now())
	}
}

func (p *Probe) add(due, woke time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakes++
	w := Wake{Due: due, Woke: woke}
	if w.Late() < p.cfg.Floor {
		return
	}
	p.late++
	p.total += w.Late()
	if w.Late() > p.max.Late() {
		p.max = w
	}
	if len(p.ring) < p.cfg.Keep {
		p.ring = append(p.ring, w)
		return
	}
	p.ring[p.next] = w
	p.next = (p.next + 1) % len(p.ring)
}

// Record is what a probe measured.
type Record struct {
	Tick, Floor time.Duration
	Since       time.Time // the probe's start
	Wakes       uint64    // every wake measured
	Late        []Wake    // the kept late wakes, oldest first
	Dropped     uint64    // late wakes older than the kept ones
	Total       time.Duration
	Max         Wake
	// The storage probe's (zero without Config.Server): asks answered,
	// the kept slow answers as stalls, and their time past the floor.
	Server       string
	Asks         uint64
	Slow         []Wake
	StorageTotal time.Duration
}

// Record returns what the probe measured so far.
func (p *Probe) Record() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Record{Tick: p.cfg.Tick, Floor: p.cfg.Floor, Since: p.started, Wakes: p.wakes, Total: p.total, Max: p.max,
		Dropped: p.late - uint64(len(p.ring))}
	r.Late = append(append(r.Late, p.ring[p.next:]...), p.ring[:p.next]...)
	r.Server, r.Asks, r.StorageTotal = p.cfg.Server, p.asks, p.slowTotal
	r.Slow = append(append(r.Slow, p.slow[p.slowNext:]...), p.slow[:p.slowNext]...)
	return r
}

// StallIn is how long the machine stalled in [from, to] by the probe's
// kept late wakes and, with a Server, its slow answers (StallIn).
func (p *Probe) StallIn(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return StallIn(p.stalls(), from, to)
}

// LateIn returns the kept late wakes that overlap [from, to], to be
// counted with another probe's (StallIn over both).
func (p *Probe) LateIn(from, to time.Time) []Wake {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Wake
	for _, w := range p.stalls() {
		if w.Woke.After(from) && w.Due.Before(to) {
			out = append(out, w)
		}
	}
	return out
}

// String is the one-line summary, e.g. "cpu probe: 6000 wakes of 10ms,
// 112 ≥1ms late (total 0.41 s), max 180 ms late at 14:02:11.250".
func (r Record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu probe: %d wakes of %v, %d ≥%v late (total %.2f s)", r.Wakes, r.Tick, len(r.Late)+int(r.Dropped), r.Floor, r.Total.Seconds())
	if r.Max.Late() > 0 {
		fmt.Fprintf(&b, ", max %d ms late at %s", r.Max.Late().Milliseconds(), r.Max.Due.Format("15:04:05.000"))
	}
	if r.Server != "" {
		fmt.Fprintf(&b, "; storage probe: %d answers, %d slower than %v (%.2f s past it)", r.Asks, len(r.Slow), StorageFloor, r.StorageTotal.Seconds())
	}
	return b.String()
}
