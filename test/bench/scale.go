package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// errCrashed is what a crashed contender's lock answers: nothing reaches
// storage any more.
var errCrashed = errors.New("bench: contender crashed")

// crashLock refuses every call once crashed, so a cancelled contender can
// neither renew nor release: storage sees what it sees after a SIGKILL.
type crashLock struct {
	lease.Lock
	dead atomic.Bool
}

func (l *crashLock) guard() error {
	if l.dead.Load() {
		return errCrashed
	}
	return nil
}

func (l *crashLock) Acquire(ctx context.Context, id string, d time.Duration) error {
	if err := l.guard(); err != nil {
		return err
	}
	return l.Lock.Acquire(ctx, id, d)
}

func (l *crashLock) Renew(ctx context.Context, id string) error {
	if err := l.guard(); err != nil {
		return err
	}
	return l.Lock.Renew(ctx, id)
}

func (l *crashLock) Release(ctx context.Context, id string) error {
	if err := l.guard(); err != nil {
		return err
	}
	return l.Lock.Release(ctx, id)
}

func (l *crashLock) Get(ctx context.Context) (lease.Record, error) {
	if err := l.guard(); err != nil {
		return lease.Record{}, err
	}
	return l.Lock.Get(ctx)
}

func (l *crashLock) Update(ctx context.Context, id string, r lease.Record) error {
	if err := l.guard(); err != nil {
		return err
	}
	return l.Lock.Update(ctx, id, r)
}

// ScaleResult is one contender count's figures.
type ScaleResult struct {
	N            int     `json:"n"`
	FirstLeaderS float64 `json:"first_leader_s"` // all N started at once on a fresh blob → first started_leading
	Crash        []Trial `json:"crash"`
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	LatencyMaxMS float64 `json:"latency_max_ms"`
	Requests     int     `json:"requests"`       // storage requests in the steady window
	RequestsPerS float64 `json:"requests_per_s"` // in the steady window
	Errors       int     `json:"request_errors"` // requests without an HTTP answer, or 5xx, in the steady window
	AzuriteCPU   float64 `json:"azurite_cpu_percent"`
	BenchCPU     float64 `json:"bench_cpu_percent"` // this process (all N contenders) over the same window
	WindowS      float64 `json:"window_s"`
	Err          string  `json:"error,omitempty"`
}

type sampleRec struct {
	mu     sync.Mutex
	on     bool
	lat    []float64 // ms
	errors int
}

func (r *sampleRec) observe(_ string, code string, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	r.lat = append(r.lat, float64(took)/float64(time.Millisecond))
	if code == "timeout" || code == "error" || (len(code) == 3 && code[0] == '5') {
		r.errors++
	}
}

type contender struct {
	id     string
	lock   *crashLock
	cancel context.CancelFunc
	done   chan struct{}
}

type eventRec struct {
	mu     sync.Mutex
	events []scaleEvent
	cond   chan struct{} // closed and replaced on every event
}

type scaleEvent struct {
	id string
	ev election.Event
}

func (r *eventRec) add(id string, ev election.Event) {
	r.mu.Lock()
	r.events = append(r.events, scaleEvent{id, ev})
	close(r.cond)
	r.cond = make(chan struct{})
	r.mu.Unlock()
}

// waitStart waits for a started_leading after t by someone other than except.
func (r *eventRec) waitStart(ctx context.Context, after time.Time, except string) (scaleEvent, error) {
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if e.ev.Kind == election.EventStartedLeading && e.id != except && e.ev.Time.After(after) {
				r.mu.Unlock()
				return e, nil
			}
		}
		ch := r.cond
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return scaleEvent{}, ctx.Err()
		}
	}
}

// leader returns the current leader's identity and the send time of its last
// successful renew (valid_until − D of its latest event carrying one).
func (r *eventRec) leader(d time.Duration) (string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var id string
	var vu time.Time
	for _, e := range r.events {
		switch e.ev.Kind {
		case election.EventStartedLeading:
			id, vu = e.id, e.ev.ValidUntil
		case election.EventRenewed:
			if e.id == id {
				vu = e.ev.ValidUntil
			}
		case election.EventStoppedLeading:
			if e.id == id {
				id = ""
			}
		}
	}
	if vu.IsZero() {
		return id, time.Time{}
	}
	return id, vu.Add(-d)
}

// ScaleRun runs n contenders of the election library with the default
// parameters in this process against a fresh Azurite: time to the first
// leader from a cold start, a steady window of request latency and Azurite
// CPU, then crashes crash failovers.
func ScaleRun(ctx context.Context, env Env, n, crashes int, window time.Duration) (res ScaleResult, err error) {
	res.N = n
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	az, err := azuritetest.Start(sctx)
	cancel()
	if err != nil {
		return res, err
	}
	defer az.Stop()
	s := &scaleRun{ctx: ctx, env: env, az: az, cfg: election.DefaultConfig("x"), rec: &sampleRec{},
		events: &eventRec{cond: make(chan struct{})}, quiet: slog.New(slog.NewTextHandler(io.Discard, nil)), res: &res}
	defer s.stopAll()
	if err := s.coldStart(n); err != nil {
		return res, err
	}
	if err := s.steadyWindow(window); err != nil {
		return res, err
	}
	for i := 1; i <= crashes; i++ {
		if err := s.crash(i, crashes); err != nil {
			return res, err
		}
	}
	return res, nil
}

// scaleRun is one scale step: its Azurite, the contenders, what they
// report, and the result being measured.
type scaleRun struct {
	ctx    context.Context
	env    Env
	az     *azuritetest.Server
	cfg    election.Config
	rec    *sampleRec // every storage request's latency and outcome
	events *eventRec  // every contender's events
	quiet  *slog.Logger
	res    *ScaleResult

	mu  sync.Mutex
	all []*contender
	seq int
}

// spawn starts one more contender with its own lock, lease ID and
// connection pool, as a separate process would have.
func (s *scaleRun) spawn() error {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("c%03d", s.seq)
	s.mu.Unlock()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}}
	cc, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: s.az.ConnectionString(), Container: "leases",
		RequestTimeout: s.cfg.RequestTimeout(), Observe: s.rec.observe, Transport: hc,
	})
	if err != nil {
		return err
	}
	bl, err := bloblock.New(cc, "leader")
	if err != nil {
		return err
	}
	c := &contender{id: id, lock: &crashLock{Lock: bl}, done: make(chan struct{})}
	ecfg := election.DefaultConfig(id)
	ecfg.Logger = s.quiet
	e, err := election.NewElector(ecfg, c.lock, election.Callbacks{
		OnStartedLeading: func(ctx context.Context, _ int64) error { <-ctx.Done(); return nil },
		OnEvent:          func(ev election.Event) { s.events.add(id, ev) },
	})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(s.ctx)
	c.cancel = cancel
	go func() { defer close(c.done); _ = e.Run(cctx) }()
	s.mu.Lock()
	s.all = append(s.all, c)
	s.mu.Unlock()
	return nil
}

// stopAll cancels every contender and waits for each to return.
func (s *scaleRun) stopAll() {
	s.mu.Lock()
	cs := append([]*contender(nil), s.all...)
	s.mu.Unlock()
	for _, c := range cs {
		c.cancel()
	}
	for _, c := range cs {
		<-c.done
	}
}

// coldStart starts n contenders at once and measures the time to the first
// leader.
func (s *scaleRun) coldStart(n int) error {
	t0 := time.Now()
	for range n {
		if err := s.spawn(); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(s.ctx, s.cfg.LeaseDuration+time.Minute)
	first, err := s.events.waitStart(wctx, t0, "")
	cancel()
	if err != nil {
		return fmt.Errorf("no first leader among %d: %w", n, err)
	}
	s.res.FirstLeaderS = first.ev.Time.Sub(t0).Seconds()
	s.env.Progress(fmt.Sprintf("scale-%d: first leader %s after %.2f s", n, first.id, s.res.FirstLeaderS))
	return nil
}

// steadyWindow measures, after 3 s of settling, every storage request's
// latency, the request rate and the CPU of Azurite and of this process
// over window.
func (s *scaleRun) steadyWindow(window time.Duration) error {
	res := s.res
	if err := sleepCtx(s.ctx, 3*time.Second); err != nil {
		return err
	}
	azPid, self := s.az.Pid(), osGetpid()
	azCPU0, _ := CPUSeconds(azPid)
	selfCPU0, _ := CPUSeconds(self)
	s.rec.mu.Lock()
	s.rec.on = true
	s.rec.mu.Unlock()
	w0 := time.Now()
	if err := sleepCtx(s.ctx, window); err != nil {
		return err
	}
	s.rec.mu.Lock()
	s.rec.on = false
	lat := append([]float64(nil), s.rec.lat...)
	res.Errors = s.rec.errors
	s.rec.mu.Unlock()
	res.WindowS = time.Since(w0).Seconds()
	azCPU1, _ := CPUSeconds(azPid)
	selfCPU1, _ := CPUSeconds(self)
	res.AzuriteCPU = 100 * (azCPU1 - azCPU0) / res.WindowS
	res.BenchCPU = 100 * (selfCPU1 - selfCPU0) / res.WindowS
	ls := Summarize(lat)
	if ls.N > 0 { // NaN would not survive results.json
		res.LatencyP50MS, res.LatencyP99MS, res.LatencyMaxMS = ls.P50, ls.P99, ls.Max
	}
	res.Requests = len(lat)
	res.RequestsPerS = float64(len(lat)) / res.WindowS
	s.env.Progress(fmt.Sprintf("scale-%d: %.0f req/s, latency p50 %.1f ms p99 %.1f ms, Azurite CPU %.0f %%", res.N, res.RequestsPerS, ls.P50, ls.P99, res.AzuriteCPU))
	return nil
}

// crash is crash i of crashes: after 1 s + U(0, renew interval) the
// leader's lock goes dead (no renew, no release), the next leader is
// awaited, and a replacement contender joins so N stays constant.
func (s *scaleRun) crash(i, crashes int) error {
	cfg, n := s.cfg, s.res.N
	if err := sleepCtx(s.ctx, time.Second+time.Duration(s.env.Rand.Int64N(int64(cfg.RenewInterval)))); err != nil {
		return err
	}
	id, lastRenew := s.events.leader(cfg.RenewDeadline)
	if id == "" {
		return fmt.Errorf("crash %d: no leader", i)
	}
	var victim *contender
	s.mu.Lock()
	for _, c := range s.all {
		if c.id == id {
			victim = c
		}
	}
	s.mu.Unlock()
	kill := time.Now()
	victim.lock.dead.Store(true)
	victim.cancel()
	wctx, cancel := context.WithTimeout(s.ctx, cfg.LeaseDuration+30*time.Second)
	next, err := s.events.waitStart(wctx, kill, id)
	cancel()
	if err != nil {
		return fmt.Errorf("crash %d: no new leader: %w", i, err)
	}
	tr := Trial{Job: fmt.Sprintf("scale-%d", n), Leader: id, NewLeader: next.id, Basis: "last renew sent",
		FromFault: next.ev.Time.Sub(kill).Seconds(), Bound: (cfg.LeaseDuration + cfg.RetryPeriod*11/10).Seconds()}
	if !lastRenew.IsZero() {
		tr.FromBasis = next.ev.Time.Sub(lastRenew).Seconds()
	}
	s.res.Crash = append(s.res.Crash, tr)
	s.env.Progress(fmt.Sprintf("scale-%d: crash %d/%d: %s → %s after %.2f s (%.2f s from its last renew)", n, i, crashes, id, next.id, tr.FromFault, tr.FromBasis))
	return s.spawn()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
