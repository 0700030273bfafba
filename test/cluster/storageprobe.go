package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// The storage probe is the harness's own evidence that storage answered
// during a run. The workers' requests go through their proxies and may be
// delayed by faults on purpose; the probe asks Azurite directly, one request
// at a time, so a stall nobody injected (Azurite's event loop blocked, the
// machine frozen) is named in the failed run's evidence instead of being
// read as the system's fault. Azurite's blob GC blocked Node for 9 s in a
// 10-minute soak and only an outside probe of this shape showed it
// (docs/chaos.md#running).

// ProbeRecord is one probe: sent at Start, answered (or failed) at End.
type ProbeRecord struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"` // zero: still waiting (InFlight)
	MS     float64   `json:"ms"`           // End-Start, or the wait so far
	Status int       `json:"status,omitzero"`
	Err    string    `json:"err,omitzero"`
	// Stall: the answer took StallThreshold or longer.
	Stall bool `json:"stall,omitempty"`
	// InFlight: not answered when the dump was written.
	InFlight bool `json:"in_flight,omitempty"`
}

// Duration is how long the probe waited.
func (r ProbeRecord) Duration() time.Duration {
	return time.Duration(r.MS * float64(time.Millisecond))
}

// StorageProbeConfig sets the probe's rhythm; the zero value is the
// default (DefaultStorageProbe).
type StorageProbeConfig struct {
	Interval       time.Duration // between probe starts (a slow probe delays the next)
	Timeout        time.Duration // one probe's bound: long enough to measure a long stall whole
	StallThreshold time.Duration // a probe this slow or slower is a stall
	Keep           int           // records kept in the ring
	KeepStalls     int           // stalls kept (the first ones; later ones are counted)
}

// DefaultStorageProbe: four probes a second, each bounded at 30 s, the last
// 4096 records (over 15 minutes) and the first 256 stalls of 1 s or more.
var DefaultStorageProbe = StorageProbeConfig{
	Interval: 250 * time.Millisecond, Timeout: 30 * time.Second,
	StallThreshold: time.Second, Keep: 4096, KeepStalls: 256,
}

// StorageProbe sends one unsigned GET at a time to a storage URL and records
// how long each answer took. Any HTTP answer (Azurite says 403 to an
// unsigned request) proves the server's event loop served it.
type StorageProbe struct {
	url    string
	cfg    StorageProbeConfig
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	ring      []ProbeRecord
	next      int
	total     uint64
	failed    uint64
	firstFail ProbeRecord // zero: none failed
	max       ProbeRecord
	stalls    []ProbeRecord
	moreStall int
	inFlight  time.Time     // start of the probe waiting now; zero between probes
	changed   chan struct{} // closed and replaced on every record
}

// StartStorageProbe starts probing url until Stop.
func StartStorageProbe(url string, cfg StorageProbeConfig) *StorageProbe {
	def := DefaultStorageProbe
	if cfg.Interval <= 0 {
		cfg.Interval = def.Interval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = def.Timeout
	}
	if cfg.StallThreshold <= 0 {
		cfg.StallThreshold = def.StallThreshold
	}
	if cfg.Keep <= 0 {
		cfg.Keep = def.Keep
	}
	if cfg.KeepStalls <= 0 {
		cfg.KeepStalls = def.KeepStalls
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &StorageProbe{
		url: url, cfg: cfg, cancel: cancel, done: make(chan struct{}),
		// Its own connection, kept alive between probes: a probe measures
		// the server, not a TCP handshake or the workers' connection pool.
		client: &http.Client{
			Timeout:   cfg.Timeout,
			Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true},
		},
		ring:    make([]ProbeRecord, cfg.Keep),
		changed: make(chan struct{}),
	}
	go p.loop(ctx)
	return p
}

// Stop ends the probe and waits for its loop; a probe cut short by Stop is
// not recorded. Safe to call twice.
func (p *StorageProbe) Stop() {
	p.cancel()
	<-p.done
	p.client.CloseIdleConnections()
}

func (p *StorageProbe) loop(ctx context.Context) {
	defer close(p.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		rec, ok := p.probe(ctx, start)
		if !ok {
			return // stopped mid-probe
		}
		p.add(rec)
		timer.Reset(max(0, p.cfg.Interval-time.Since(start)))
	}
}

// probe sends one request; ok is false when ctx ended it.
func (p *StorageProbe) probe(ctx context.Context, start time.Time) (ProbeRecord, bool) {
	p.mu.Lock()
	p.inFlight = start
	p.mu.Unlock()
	rec := ProbeRecord{Start: start}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err == nil {
		var resp *http.Response
		resp, err = p.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			rec.Status = resp.StatusCode
		}
	}
	rec.End = time.Now()
	if ctx.Err() != nil {
		return rec, false
	}
	if err != nil {
		rec.Err = err.Error()
	}
	rec.MS = float64(rec.End.Sub(start).Microseconds()) / 1000
	rec.Stall = rec.End.Sub(start) >= p.cfg.StallThreshold
	return rec, true
}

func (p *StorageProbe) add(r ProbeRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight = time.Time{}
	p.ring[p.next] = r
	p.next = (p.next + 1) % len(p.ring)
	p.total++
	if r.Err != "" {
		if p.failed == 0 {
			p.firstFail = r
		}
		p.failed++
	}
	if r.MS > p.max.MS {
		p.max = r
	}
	if r.Stall {
		if len(p.stalls) < p.cfg.KeepStalls {
			p.stalls = append(p.stalls, r)
		} else {
			p.moreStall++
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// ProbeSummary is what the probe saw so far.
type ProbeSummary struct {
	Probes     uint64        // answered or failed
	Failed     uint64        // no HTTP answer (refused, timed out)
	FirstFail  *ProbeRecord  // the first of them; nil when none failed
	Max        ProbeRecord   // the slowest
	Threshold  time.Duration // a stall is a probe this slow or slower
	Stalls     []ProbeRecord // the first KeepStalls stalls, oldest first
	MoreStalls int           // stalls not kept
	// InFlight is the probe waiting now when it has waited Threshold or
	// more (a stall still going on); nil otherwise.
	InFlight *ProbeRecord
}

// Summary returns what the probe saw so far.
func (p *StorageProbe) Summary() ProbeSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.summaryLocked(time.Now())
}

func (p *StorageProbe) summaryLocked(now time.Time) ProbeSummary {
	s := ProbeSummary{
		Probes: p.total, Failed: p.failed, Max: p.max, Threshold: p.cfg.StallThreshold,
		Stalls: append([]ProbeRecord(nil), p.stalls...), MoreStalls: p.moreStall,
	}
	if p.failed > 0 {
		first := p.firstFail
		s.FirstFail = &first
	}
	if !p.inFlight.IsZero() && now.Sub(p.inFlight) >= p.cfg.StallThreshold {
		s.InFlight = &ProbeRecord{
			Start: p.inFlight, MS: float64(now.Sub(p.inFlight).Microseconds()) / 1000,
			Stall: true, InFlight: true,
		}
	}
	return s
}

// Await waits until cond holds for the summary (checked on every new
// record) or ctx ends.
func (p *StorageProbe) Await(ctx context.Context, cond func(ProbeSummary) bool) (ProbeSummary, error) {
	for {
		p.mu.Lock()
		s := p.summaryLocked(time.Now())
		changed := p.changed
		p.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("storage probe: %w (so far: %s)", ctx.Err(), s)
		case <-changed:
		case <-p.done:
			return s, fmt.Errorf("storage probe: stopped (so far: %s)", s)
		}
	}
}

// String is the one-line summary the soaks print, e.g.
// "storage probe: 2400 probes (0 failed), max 41 ms, stalls ≥1s: none".
func (s ProbeSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage probe: %d probes (%d failed), max %.0f ms", s.Probes, s.Failed, s.Max.MS)
	if !s.Max.Start.IsZero() {
		fmt.Fprintf(&b, " at %s", s.Max.Start.Format("15:04:05.000"))
	}
	fmt.Fprintf(&b, ", stalls ≥%v: ", s.Threshold)
	if len(s.Stalls) == 0 && s.InFlight == nil {
		b.WriteString("none")
		return b.String()
	}
	fmt.Fprintf(&b, "%d", len(s.Stalls)+s.MoreStalls)
	for i, r := range s.Stalls {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s–%s %.2f s", r.Start.Format("15:04:05.000"), r.End.Format("15:04:05.000"), r.Duration().Seconds())
		if i == len(s.Stalls)-1 {
			if s.MoreStalls > 0 {
				fmt.Fprintf(&b, ", %d more", s.MoreStalls)
			}
			b.WriteString(")")
		}
	}
	if s.InFlight != nil {
		fmt.Fprintf(&b, "; unanswered since %s (%.2f s so far)", s.InFlight.Start.Format("15:04:05.000"), s.InFlight.Duration().Seconds())
	}
	return b.String()
}

// SlowFloor is the answer time above which a storage probe counts as
// storage being slow: Azurite answers an unsigned GET in a few
// milliseconds when the machine runs it.
const SlowFloor = 20 * time.Millisecond

// Slow is how long storage kept the harness waiting past SlowFloor, one
// interval per slow answer — [sent + SlowFloor, answered], the one still
// waiting up to now — over the kept records, oldest first. The checker
// counts them, with the CPU probe's late wakes, as the environment's stall
// in a timing bound's window (docs/chaos.md#a-busy-machine): a storage
// stall nobody injected excuses a timing miss into inconclusive, never
// into a pass.
func (p *StorageProbe) Slow() []stalltest.Wake {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(p.total, uint64(len(p.ring)))
	recs := append([]ProbeRecord(nil), p.stalls...)
	recs = append(recs, p.ring[:n]...)
	var out []stalltest.Wake
	for _, r := range recs {
		if !r.End.IsZero() && r.Duration() > SlowFloor {
			out = append(out, stalltest.Wake{Due: r.Start.Add(SlowFloor), Woke: r.End})
		}
	}
	if !p.inFlight.IsZero() && time.Since(p.inFlight) > SlowFloor {
		out = append(out, stalltest.Wake{Due: p.inFlight.Add(SlowFloor), Woke: time.Now()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Due.Before(out[j].Due) })
	return out
}

// Explanations are the lines a failed run's log carries, one per stall
// (storage did not answer the harness from T1 to T2), and one for probes
// that got no answer at all. They change no verdict themselves (the
// checker's timing bounds count the same stalls through Slow).
func (s ProbeSummary) Explanations() []string {
	var out []string
	for _, r := range s.Stalls {
		out = append(out, fmt.Sprintf("storage probe: storage (Azurite) did not answer the harness's probe from %s to %s (%.1f s): a failure in that window may be the environment, not the system",
			r.Start.Format("15:04:05.000"), r.End.Format("15:04:05.000"), r.Duration().Seconds()))
	}
	if s.MoreStalls > 0 {
		out = append(out, fmt.Sprintf("storage probe: %d more stalls not kept", s.MoreStalls))
	}
	if r := s.FirstFail; r != nil {
		out = append(out, fmt.Sprintf("storage probe: %d probes got no HTTP answer from storage (Azurite), the first sent at %s: %s",
			s.Failed, r.Start.Format("15:04:05.000"), r.Err))
	}
	if r := s.InFlight; r != nil {
		out = append(out, fmt.Sprintf("storage probe: storage (Azurite) has not answered the harness's probe since %s (%.1f s so far): a failure in that window may be the environment, not the system",
			r.Start.Format("15:04:05.000"), r.Duration().Seconds()))
	}
	return out
}

// WriteJSONL writes the probe's evidence to w, one ProbeRecord a line,
// oldest first: the stalls older than the ring, the ring, and a probe still
// waiting (in_flight) when it has waited past the threshold. A first line
// {"overwritten": N} says how many records the ring dropped.
func (p *StorageProbe) WriteJSONL(w io.Writer) error {
	p.mu.Lock()
	s := p.summaryLocked(time.Now())
	n := uint64(len(p.ring))
	var recs []ProbeRecord
	var lost uint64
	if p.total <= n {
		recs = append(recs, p.ring[:p.total]...)
	} else {
		recs = append(append(recs, p.ring[p.next:]...), p.ring[:p.next]...)
		lost = p.total - n
	}
	p.mu.Unlock()

	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if lost > 0 {
		if err := enc.Encode(map[string]uint64{"overwritten": lost}); err != nil {
			return err
		}
	}
	var out []ProbeRecord
	for _, st := range s.Stalls {
		if len(recs) == 0 || st.Start.Before(recs[0].Start) {
			out = append(out, st)
		}
	}
	out = append(out, recs...)
	if s.InFlight != nil {
		out = append(out, *s.InFlight)
	}
	for _, r := range out {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return bw.Flush()
}
