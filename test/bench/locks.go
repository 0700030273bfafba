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
	az, err := azuritetest.Start(ctx)
	if err != nil {
		return res, err
	}
	defer az.Stop()
	ops := &opCounter{}
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "locks", RequestTimeout: 2 * time.Second, Observe: ops.observe})
	if err != nil {
		return res, err
	}
	lib, err := mutex.New(c, mutex.DefaultConfig("bench"))
	if err != nil {
		return res, err
	}
	progress("locks: library round trips")
	var xs []float64
	for i := 0; i < 200 && ctx.Err() == nil; i++ {
		start := time.Now()
		h, err := lib.TryLock(ctx, fmt.Sprintf("lib-%d", i%20))
		if err != nil {
			return res, err
		}
		if err := h.Unlock(ctx); err != nil {
			return res, err
		}
		xs = append(xs, time.Since(start).Seconds())
	}
	res.LibraryRTT = spread(xs)

	url, stop, err := startLockService(ctx, worker, az.ConnectionString())
	if err != nil {
		return res, err
	}
	defer stop()
	progress("locks: HTTP round trips")
	xs = nil
	for i := 0; i < 200 && ctx.Err() == nil; i++ {
		start := time.Now()
		r := fmt.Sprintf("http-%d", i%20)
		if ok, err := lockHTTP(ctx, url, r, "bench", 15, 0); err != nil || !ok {
			return res, fmt.Errorf("http lock: %v %v", ok, err)
		}
		if st, err := unlockHTTP(ctx, url, r, "bench"); err != nil || st != 0 {
			return res, fmt.Errorf("http unlock: %d %v", st, err)
		}
		xs = append(xs, time.Since(start).Seconds())
	}
	res.HTTPRTT = spread(xs)

	progress("locks: handover after an unlock")
	xs = nil
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		r := fmt.Sprintf("hand-%d", i)
		if ok, err := lockHTTP(ctx, url, r, "a", 15, 0); err != nil || !ok {
			return res, fmt.Errorf("handover lock: %v %v", ok, err)
		}
		got := make(chan time.Time, 1)
		go func() {
			_, _ = lockHTTP(ctx, url, r, "b", 15, 10)
			got <- time.Now()
		}()
		time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
		unlocked := time.Now()
		if _, err := unlockHTTP(ctx, url, r, "a"); err != nil {
			return res, err
		}
		xs = append(xs, (<-got).Sub(unlocked).Seconds())
	}
	res.HandoverUnlock = spread(xs)

	progress("locks: handover after a holder's death (5 at once, 15 s leases)")
	xs = nil
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprintf("dead-%d", i)
			sent := time.Now()
			if ok, err := lockHTTP(ctx, url, r, "dead", 15, 0); err != nil || !ok {
				return
			}
			for ctx.Err() == nil && time.Since(sent) < 40*time.Second {
				if ok, _ := lockHTTP(ctx, url, r, "waiter", 15, 10); ok {
					mu.Lock()
					xs = append(xs, time.Since(sent.Add(15*time.Second)).Seconds())
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	res.HandoverDeath = spread(xs)

	progress("locks: throughput, 1,000 resources × 10 clients, 30 s")
	var pairs, denied atomic.Int64
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	for k := 0; k < 10; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("t%d", k)
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			for i := 0; i < 100000 && tctx.Err() == nil; i++ {
				r := fmt.Sprintf("res-%d", rng.IntN(1000))
				ok, err := lockHTTP(tctx, url, r, owner, 15, 0)
				if err != nil || !ok {
					denied.Add(1)
					continue
				}
				if st, err := unlockHTTP(tctx, url, r, owner); err == nil && st == 0 {
					pairs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	win := time.Since(start).Seconds()
	res.Throughput, res.Denied, res.ThroughputWin = float64(pairs.Load())/win, float64(denied.Load())/win, win

	progress("locks: storage operations of one held lock for 60 s")
	before := ops.n.Load()
	h, err := lib.TryLock(ctx, "held-minute")
	if err != nil {
		return res, err
	}
	select {
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	if err := h.Unlock(ctx); err != nil {
		return res, err
	}
	res.OpsPerMinute = float64(ops.n.Load() - before)
	return res, ctx.Err()
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
