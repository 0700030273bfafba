package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

// The locks phase: named resource locks (worker/mutex, blobleader locks) on
// one Azurite, measured side by side through the library and through HTTP.

// LocksResult is the locks phase's numbers (seconds unless named).
type LocksResult struct {
	LibraryRTT     Spread  `json:"library_rtt"`      // TryLock + Unlock, uncontended
	HTTPRTT        Spread  `json:"http_rtt"`         // lock + unlock through the service
	HandoverUnlock Spread  `json:"handover_unlock"`  // unlock → a waiting client's grant
	HandoverDeath  Spread  `json:"handover_death"`   // the dead holder's lease end → a waiting client's grant
	Throughput     float64 `json:"throughput"`       // lock+unlock pairs a second, 1,000 resources × 10 clients
	Denied         float64 `json:"denied"`           // lock answers false a second in the same run
	OpsPerMinute   float64 `json:"ops_per_minute"`   // storage requests per held lock-minute (*Held)
	ThroughputWin  float64 `json:"throughput_win_s"` // the throughput window
}

// Spread is a sample's size and quantiles, in seconds.
type Spread struct {
	N             int
	P50, P99, Max float64
}

func spread(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	sort.Float64s(xs)
	return Spread{N: len(xs), P50: Percentile(xs, 50), P99: Percentile(xs, 99), Max: xs[len(xs)-1]}
}

type opCounter struct{ n atomic.Int64 }

func (o *opCounter) observe(string, string, time.Duration) { o.n.Add(1) }

// LocksRun measures the locks phase against a private Azurite and the
// blobleader binary at worker (its `locks` subcommand). Every loop is
// bounded in count and time.
func LocksRun(ctx context.Context, worker string, progress func(string)) (LocksResult, error) {
	var res LocksResult
	p, err := openLocksPhase(ctx, progress)
	if err != nil {
		return res, err
	}
	defer p.close()
	// 1. The library, uncontended.
	if res.LibraryRTT, err = p.libraryRTT(ctx); err != nil {
		return res, err
	}
	// 2. The service: round trips, hand-overs, throughput.
	if err := p.startService(ctx, worker); err != nil {
		return res, err
	}
	if res.HTTPRTT, err = p.httpRTT(ctx); err != nil {
		return res, err
	}
	if res.HandoverUnlock, err = p.handoverUnlock(ctx); err != nil {
		return res, err
	}
	res.HandoverDeath = p.handoverDeath(ctx)
	res.Throughput, res.Denied, res.ThroughputWin = p.throughput(ctx)
	// 3. What one held lock costs in storage requests.
	if res.OpsPerMinute, err = p.heldMinute(ctx); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// locksPhase is the locks phase's set-up: a private Azurite, the library
// on it (its storage requests counted), and the lock service once started.
type locksPhase struct {
	progress func(string)
	az       *azuritetest.Server
	ops      *opCounter
	lib      *mutex.Locker
	url      string // the lock service's; "" until startService
	stop     func() // stops the lock service
}

func openLocksPhase(ctx context.Context, progress func(string)) (*locksPhase, error) {
	az, err := azuritetest.Start(ctx)
	if err != nil {
		return nil, err
	}
	p := &locksPhase{progress: progress, az: az, ops: &opCounter{}, stop: func() {}}
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "locks", RequestTimeout: 2 * time.Second, Observe: p.ops.observe})
	if err == nil {
		p.lib, err = mutex.New(c, mutex.DefaultConfig("bench"))
	}
	if err != nil {
		az.Stop()
		return nil, err
	}
	return p, nil
}

func (p *locksPhase) close() {
	p.stop()
	p.az.Stop()
}

func (p *locksPhase) startService(ctx context.Context, worker string) (err error) {
	p.url, p.stop, err = startLockService(ctx, worker, p.az.ConnectionString())
	if err != nil {
		p.stop = func() {}
	}
	return err
}

// rounds times n rounds of round (fewer if ctx ends), stopping at the first error.
func rounds(ctx context.Context, n int, round func(i int) error) (Spread, error) {
	var xs []float64
	for i := 0; i < n && ctx.Err() == nil; i++ {
		start := time.Now()
		if err := round(i); err != nil {
			return Spread{}, err
		}
		xs = append(xs, time.Since(start).Seconds())
	}
	return spread(xs), nil
}

// libraryRTT: TryLock + Unlock through the library, 20 resources in turn.
func (p *locksPhase) libraryRTT(ctx context.Context) (Spread, error) {
	p.progress("locks: library round trips")
	return rounds(ctx, 200, func(i int) error {
		h, err := p.lib.TryLock(ctx, fmt.Sprintf("lib-%d", i%20))
		if err != nil {
			return err
		}
		return h.Unlock(ctx)
	})
}

// httpRTT: lock + unlock through the service, 20 resources in turn.
func (p *locksPhase) httpRTT(ctx context.Context) (Spread, error) {
	p.progress("locks: HTTP round trips")
	return rounds(ctx, 200, func(i int) error {
		r := fmt.Sprintf("http-%d", i%20)
		if ok, err := lockHTTP(ctx, p.url, r, "bench", 15, 0); err != nil || !ok {
			return fmt.Errorf("http lock: %v %v", ok, err)
		}
		if st, err := unlockHTTP(ctx, p.url, r, "bench"); err != nil || st != 0 {
			return fmt.Errorf("http unlock: %d %v", st, err)
		}
		return nil
	})
}

// handoverUnlock: from an unlock to the grant of a client waiting on it.
func (p *locksPhase) handoverUnlock(ctx context.Context) (Spread, error) {
	p.progress("locks: handover after an unlock")
	var xs []float64
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		r := fmt.Sprintf("hand-%d", i)
		if ok, err := lockHTTP(ctx, p.url, r, "a", 15, 0); err != nil || !ok {
			return Spread{}, fmt.Errorf("handover lock: %v %v", ok, err)
		}
		got := make(chan time.Time, 1)
		go func() {
			_, _ = lockHTTP(ctx, p.url, r, "b", 15, 10)
			got <- time.Now()
		}()
		time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
		unlocked := time.Now()
		if _, err := unlockHTTP(ctx, p.url, r, "a"); err != nil {
			return Spread{}, err
		}
		xs = append(xs, (<-got).Sub(unlocked).Seconds())
	}
	return spread(xs), nil
}

// handoverDeath: five holders that never unlock; from each lease's end to
// the grant of a client polling for it (bounded at 40 s each).
func (p *locksPhase) handoverDeath(ctx context.Context) Spread {
	p.progress("locks: handover after a holder's death (5 at once, 15 s leases)")
	var xs []float64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprintf("dead-%d", i)
			sent := time.Now()
			if ok, err := lockHTTP(ctx, p.url, r, "dead", 15, 0); err != nil || !ok {
				return
			}
			for ctx.Err() == nil && time.Since(sent) < 40*time.Second {
				if ok, _ := lockHTTP(ctx, p.url, r, "waiter", 15, 10); ok {
					mu.Lock()
					xs = append(xs, time.Since(sent.Add(15*time.Second)).Seconds())
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return spread(xs)
}

// throughput: ten clients lock and unlock random ones of 1,000 resources
// for 30 s; it returns the pairs and the refusals a second, and the window.
func (p *locksPhase) throughput(ctx context.Context) (pairsPerS, deniedPerS, window float64) {
	p.progress("locks: throughput, 1,000 resources × 10 clients, 30 s")
	var pairs, denied atomic.Int64
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for k := 0; k < 10; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("t%d", k)
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			for i := 0; i < 100000 && tctx.Err() == nil; i++ {
				r := fmt.Sprintf("res-%d", rng.IntN(1000))
				ok, err := lockHTTP(tctx, p.url, r, owner, 15, 0)
				if err != nil || !ok {
					denied.Add(1)
					continue
				}
				if st, err := unlockHTTP(tctx, p.url, r, owner); err == nil && st == 0 {
					pairs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	window = time.Since(start).Seconds()
	return float64(pairs.Load()) / window, float64(denied.Load()) / window, window
}

// heldMinute: the storage requests of one lock held through the library
// for 60 s (its renewals).
func (p *locksPhase) heldMinute(ctx context.Context) (float64, error) {
	p.progress("locks: storage operations of one held lock for 60 s")
	before := p.ops.n.Load()
	h, err := p.lib.TryLock(ctx, "held-minute")
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	if err := h.Unlock(ctx); err != nil {
		return 0, err
	}
	return float64(p.ops.n.Load() - before), nil
}

// startLockService runs `worker locks` on a free loopback port.
func startLockService(ctx context.Context, worker, conn string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, worker, "locks", "--connection-string", conn, "--container", "svc", "--listen", addr, "--grpc-listen=", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	url := "http://" + addr
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			return url, stop, nil
		}
	}
	stop()
	return "", nil, errors.New("lock service did not start within 10s")
}

var lockHTTPClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func postLock(ctx context.Context, url, path string, body map[string]any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	resp, err := lockHTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: HTTP %d %v", path, resp.StatusCode, m)
	}
	return m, nil
}

func lockHTTP(ctx context.Context, url, r, owner string, expiry, wait int) (bool, error) {
	m, err := postLock(ctx, url, "/v1.0-alpha1/lock/lockstore", map[string]any{"resourceId": r, "lockOwner": owner, "expiryInSeconds": expiry, "waitSeconds": wait})
	if err != nil {
		return false, err
	}
	return m["success"] == true, nil
}

func unlockHTTP(ctx context.Context, url, r, owner string) (int, error) {
	m, err := postLock(ctx, url, "/v1.0-alpha1/unlock/lockstore", map[string]any{"resourceId": r, "lockOwner": owner})
	if err != nil {
		return -1, err
	}
	return int(m["status"].(float64)), nil
}

// LocksSection renders the locks phase as a Markdown table.
func LocksSection(r LocksResult) string {
	var b strings.Builder
	ms := func(s float64) string { return fmt.Sprintf("%.1f ms", s*1000) }
	fmt.Fprintf(&b, "| measure | through the library (`worker/mutex`) | through HTTP (`blobleader locks`) |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| uncontended acquire + release round trip, p50 / p99 (n) | %s / %s (%d) | %s / %s (%d) |\n",
		ms(r.LibraryRTT.P50), ms(r.LibraryRTT.P99), r.LibraryRTT.N, ms(r.HTTPRTT.P50), ms(r.HTTPRTT.P99), r.HTTPRTT.N)
	fmt.Fprintf(&b, "| handover to a waiting client after an unlock, p50 / max (n) | | %.2f s / %.2f s (%d) |\n", r.HandoverUnlock.P50, r.HandoverUnlock.Max, r.HandoverUnlock.N)
	fmt.Fprintf(&b, "| handover after the holder's death, from its lease's end (send + 15 s), p50 / max (n) | | %.2f s / %.2f s (%d) |\n", r.HandoverDeath.P50, r.HandoverDeath.Max, r.HandoverDeath.N)
	fmt.Fprintf(&b, "| throughput, 1,000 resources × 10 clients, lock + unlock pairs a second (%.0f s) | | %.0f /s (%.0f /s answered false) |\n", r.ThroughputWin, r.Throughput, r.Denied)
	fmt.Fprintf(&b, "| storage operations per held lock-minute (`*Held`, renew every 2 s) | %.0f | renew as the client chooses: 1 per renew |\n", r.OpsPerMinute)
	return b.String()
}
