package cluster

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The CPU probe is the harness's own evidence of how promptly this machine
// runs a process that is due, as the storage probe is of whether storage
// answered. One thread of the harness, locked to itself, sleeps Tick at a
// time in the kernel and records how late it woke: from its due time to its
// wake it was runnable and not run, and so, on a machine shared with CPU
// hogs, builds and emulators, was any supervisor or worker due then. The
// checker adds the stall measured in a timing bound's window to that bound
// (docs/chaos.md#a-busy-machine): a miss it explains is inconclusive, never
// a pass or a failure.

// SchedProbeConfig sets the probe's rhythm; the zero value is the default
// (DefaultSchedProbe).
type SchedProbeConfig struct {
	Tick  time.Duration // one sleep
	Floor time.Duration // a wake this late or later is recorded
	// StallThreshold: a wake this late or later is a stall in the summary
	// line.
	StallThreshold time.Duration
	Keep           int // late wakes kept (the latest)
}

// DefaultSchedProbe: a 10 ms sleep, wakes 1 ms late or later recorded, the
// latest 65536 of them (at one late wake a tick, 11 minutes), stalls from
// 100 ms in the summary.
var DefaultSchedProbe = SchedProbeConfig{
	Tick: 10 * time.Millisecond, Floor: time.Millisecond,
	StallThreshold: 100 * time.Millisecond, Keep: 1 << 16,
}

// LateWake is one wake of the probe at least Floor late.
type LateWake struct {
	Due  time.Time `json:"due"`
	Woke time.Time `json:"woke"`
}

// Late is how late it woke.
func (w LateWake) Late() time.Duration { return w.Woke.Sub(w.Due) }

// SchedProbe is a running CPU probe.
type SchedProbe struct {
	cfg  SchedProbeConfig
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	started time.Time
	ring    []LateWake
	next    int
	late    uint64 // late wakes ever recorded
	wakes   uint64
	total   time.Duration // sum of the recorded lateness
	max     LateWake
}

// StartSchedProbe starts probing until Stop.
func StartSchedProbe(cfg SchedProbeConfig) *SchedProbe {
	def := DefaultSchedProbe
	if cfg.Tick <= 0 {
		cfg.Tick = def.Tick
	}
	if cfg.Floor <= 0 {
		cfg.Floor = def.Floor
	}
	if cfg.StallThreshold <= 0 {
		cfg.StallThreshold = def.StallThreshold
	}
	if cfg.Keep <= 0 {
		cfg.Keep = def.Keep
	}
	p := &SchedProbe{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), started: time.Now(), ring: make([]LateWake, 0, min(cfg.Keep, 1024))}
	go p.loop()
	return p
}

// Stop ends the probe and waits for its thread. Safe to call twice.
func (p *SchedProbe) Stop() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

func (p *SchedProbe) loop() {
	defer close(p.done)
	// Its own OS thread, asleep in the kernel: what wakes it is the
	// kernel's scheduler, as for a supervisor's timer.
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

func (p *SchedProbe) add(due, woke time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakes++
	w := LateWake{Due: due, Woke: woke}
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

// SchedRecord is what the probe measured so far.
type SchedRecord struct {
	Tick, Floor, Threshold time.Duration
	Since                  time.Time  // the probe's start
	Wakes                  uint64     // every wake measured
	Late                   []LateWake // the kept late wakes, oldest first
	Dropped                uint64     // late wakes older than the kept ones
	Total                  time.Duration
	Max                    LateWake
	Stalls                 int // wakes at least Threshold late, among the kept ones
}

// Record returns what the probe measured so far.
func (p *SchedProbe) Record() SchedRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := SchedRecord{
		Tick: p.cfg.Tick, Floor: p.cfg.Floor, Threshold: p.cfg.StallThreshold, Since: p.started,
		Wakes: p.wakes, Total: p.total, Max: p.max, Dropped: p.late - uint64(len(p.ring)),
	}
	r.Late = append(append(r.Late, p.ring[p.next:]...), p.ring[:p.next]...)
	for _, w := range r.Late {
		if w.Late() >= p.cfg.StallThreshold {
			r.Stalls++
		}
	}
	return r
}

// String is the one-line summary a run logs, e.g. "cpu probe: 6000 wakes
// of 10ms, 112 ≥1ms late (total 0.41 s), max 180 ms late at 14:02:11.250,
// 1 stall ≥100ms".
func (r SchedRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu probe: %d wakes of %v, %d ≥%v late (total %.2f s)", r.Wakes, r.Tick, len(r.Late)+int(r.Dropped), r.Floor, r.Total.Seconds())
	if r.Max.Late() > 0 {
		fmt.Fprintf(&b, ", max %d ms late at %s", r.Max.Late().Milliseconds(), r.Max.Due.Format("15:04:05.000"))
	}
	fmt.Fprintf(&b, ", %d stall(s) ≥%v", r.Stalls, r.Threshold)
	return b.String()
}
