package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/cluster"
)

// RoleCost is one worker's storage operations per hour over the window.
type RoleCost struct {
	Identity   string             `json:"identity"`
	Role       string             `json:"role"`
	ByOp       map[string]float64 `json:"ops_per_hour_by_op"`
	Election   float64            `json:"election_ops_per_hour"` // lease and lock-record ops
	Task       float64            `json:"task_ops_per_hour"`     // ledger (the reference task) and history
	RSSBytes   int64              `json:"rss_bytes"`
	CPUPercent float64            `json:"cpu_percent"` // of one core, over the window
}

// CostResult is one flavor's steady-state cost and footprint.
type CostResult struct {
	Flavor        string     `json:"flavor"`
	WindowS       float64    `json:"window_s"`
	Workers       []RoleCost `json:"workers"`
	LeaderChanged bool       `json:"leader_changed"`
	AzuriteCPU    float64    `json:"azurite_cpu_percent"`
	BinaryBytes   int64      `json:"binary_bytes"`
	Err           string     `json:"error,omitempty"`
}

// Leader and Follower pick the leader's row and the followers' mean.
func (c CostResult) Leader() (RoleCost, bool) {
	for _, w := range c.Workers {
		if w.Role == "leader" {
			return w, true
		}
	}
	return RoleCost{}, false
}

func (c CostResult) Follower() (RoleCost, bool) {
	var n float64
	m := RoleCost{Role: "follower", ByOp: map[string]float64{}}
	for _, w := range c.Workers {
		if w.Role != "follower" {
			continue
		}
		n++
		m.Election += w.Election
		m.Task += w.Task
		m.RSSBytes += w.RSSBytes
		m.CPUPercent += w.CPUPercent
		for op, v := range w.ByOp {
			m.ByOp[op] += v
		}
	}
	if n == 0 {
		return m, false
	}
	m.Election /= n
	m.Task /= n
	m.RSSBytes = int64(float64(m.RSSBytes) / n)
	m.CPUPercent /= n
	for op := range m.ByOp {
		m.ByOp[op] /= n
	}
	return m, true
}

func scrape(ctx context.Context, listen string) (RequestCounts, error) {
	return scrapeWith(ctx, listen, ParseRequestCounts)
}

// scrapeWith GETs a worker's /metrics (3 s at most) and parses the body.
func scrapeWith[T any](ctx context.Context, listen string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+listen+"/metrics", nil)
	if err != nil {
		return zero, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return zero, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return zero, fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	return parse(resp.Body)
}

// CostRun starts three workers, lets them settle, and counts each worker's
// storage requests (its own blobleader_storage_requests_total) over window,
// with its RSS at the end and its CPU over the window.
func CostRun(t testing.TB, env Env, fl Flavor, window time.Duration) CostResult {
	c := startCluster(t, fl, 3)
	ctx := context.Background()
	if _, err := c.FindLeader(fl.crashBound() + 20*time.Second); err != nil {
		t.Fatalf("%v", err)
	}
	// Settle: every follower has made its first polls and metadata reads.
	env.sleep(t, fl.Params.RetryPeriod+3*time.Second)
	ps := costProbes(t, c)
	for _, p := range ps {
		st, err := findStatus(ctx, c.Workers(), p.id)
		if err != nil {
			t.Fatalf("%v", err)
		}
		p.role = st.Role
	}
	az := c.Azurite().Pid()
	azBefore, _ := CPUSeconds(az)
	t0 := time.Now()
	for _, p := range ps {
		p.start(t, ctx)
		p.cpu, _ = CPUSeconds(p.proc.Pid)
	}
	env.Progress(fmt.Sprintf("cost-%s: counting storage requests of 3 workers for %v", fl.Name, window))
	env.sleep(t, window)
	out := CostResult{Flavor: fl.Name}
	var el float64
	for _, p := range ps {
		var rc RoleCost
		rc, el = p.windowCost(t, ctx, t0)
		cpu, _ := CPUSeconds(p.proc.Pid)
		rc.CPUPercent = 100 * (cpu - p.cpu) / el
		st, err := findStatus(ctx, c.Workers(), p.id)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if st.Role != p.role {
			out.LeaderChanged = true
		}
		rc.Role = st.Role
		out.Workers = append(out.Workers, rc)
	}
	out.WindowS = el
	if azAfter, err := CPUSeconds(az); err == nil {
		out.AzuriteCPU = 100 * (azAfter - azBefore) / time.Since(t0).Seconds()
	}
	return out
}

// costProbe is one worker whose storage requests are counted over a window:
// its process, its counters at the start, and what the caller keeps beside
// them (its CPU seconds and role at the start).
type costProbe struct {
	id     string
	proc   WorkerProc
	before RequestCounts
	cpu    float64
	role   string
}

// costProbes finds the process of each of c's workers.
func costProbes(t testing.TB, c *cluster.Local) []*costProbe {
	t.Helper()
	var ps []*costProbe
	for _, w := range c.Workers() {
		p, err := FindWorker(c.Dir(), w.Identity())
		if err != nil {
			t.Fatalf("%v", err)
		}
		ps = append(ps, &costProbe{id: w.Identity(), proc: p})
	}
	return ps
}

// start reads p's request counters at the start of the window.
func (p *costProbe) start(t testing.TB, ctx context.Context) {
	t.Helper()
	var err error
	if p.before, err = scrape(ctx, p.proc.Listen); err != nil {
		t.Fatalf("%s: %v", p.id, err)
	}
}

// windowCost ends p's window begun at t0: its storage requests per hour by
// op since start, split into election and task, and its RSS now. It returns
// the window's length in seconds; role and CPU are the caller's.
func (p *costProbe) windowCost(t testing.TB, ctx context.Context, t0 time.Time) (RoleCost, float64) {
	t.Helper()
	after, err := scrape(ctx, p.proc.Listen)
	if err != nil {
		t.Fatalf("%s: %v", p.id, err)
	}
	el := time.Since(t0).Seconds()
	rss, _ := RSSBytes(p.proc.Pid)
	rc := RoleCost{Identity: p.id, ByOp: map[string]float64{}, RSSBytes: rss}
	for op, v := range after.Sub(p.before) {
		rc.ByOp[op] = v * 3600 / el
	}
	rc.Election, rc.Task = RequestCounts(rc.ByOp).Split()
	return rc, el
}

// findStatus is the status of the worker with identity id among ws.
func findStatus(ctx context.Context, ws []cluster.Worker, id string) (cluster.Status, error) {
	for _, w := range ws {
		if w.Identity() == id {
			st, err := w.Status(ctx)
			if err != nil {
				return cluster.Status{}, fmt.Errorf("status %s: %w", id, err)
			}
			return st, nil
		}
	}
	return cluster.Status{}, fmt.Errorf("no worker %s", id)
}
