// Command dashshot makes the picture of the Grafana dashboard in
// docs/operations.md from a real local run: it starts Azurite, three
// `blobleader --shards N` workers and a real Prometheus scraping them (with
// the shipped rules loaded), drives a short scenario (a crash, a graceful
// handover, a paused follower), then runs every query of
// infra/monitoring/grafana/blobleader.json against that Prometheus and draws
// the panels at their grid positions as SVG. It is not Grafana's renderer
// (Grafana cannot be installed from the registries this project uses): the
// queries, layout, legends and value mappings are the dashboard's, the
// drawing is ours.
//
//	make dashboard-shot   (builds the worker, installs the pinned Prometheus, runs this)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "dashshot: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

type options struct {
	worker, prometheus, dashboard, rules, out string
	workers, shards                           int
	settle                                    time.Duration
}

func parseFlags() (options, error) {
	var o options
	flag.StringVar(&o.worker, "worker", "bin/blobleader", "path to the blobleader binary")
	flag.StringVar(&o.prometheus, "prometheus", "", "path to the prometheus binary (required)")
	flag.StringVar(&o.dashboard, "dashboard", "infra/monitoring/grafana/blobleader.json", "the Grafana dashboard to draw")
	flag.StringVar(&o.rules, "rules", "infra/monitoring/prometheus/blobleader.rules.yml", "Prometheus rules to load (checked by Prometheus at start)")
	flag.StringVar(&o.out, "out", "docs/monitoring/dashboard.svg", "the SVG to write")
	flag.IntVar(&o.workers, "workers", 3, "workers to start (2–9)")
	flag.IntVar(&o.shards, "shards", 6, "--shards of every worker (1–64)")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "how long the cluster runs between the scenario's steps (10s–5m)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "dashshot — a picture of the Grafana dashboard from a real local run.\n\nUsage: dashshot --prometheus PATH [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	switch {
	case o.prometheus == "":
		return o, usageError{errors.New("--prometheus is required (make dashboard-shot installs the pinned one)")}
	case o.workers < 2 || o.workers > 9:
		return o, usageError{fmt.Errorf("invalid --workers %d: must be 2–9", o.workers)}
	case o.shards < 1 || o.shards > 64:
		return o, usageError{fmt.Errorf("invalid --shards %d: must be 1–64", o.shards)}
	case o.settle < 10*time.Second || o.settle > 5*time.Minute:
		return o, usageError{fmt.Errorf("invalid --settle %s: must be 10s–5m", o.settle)}
	}
	for _, f := range []struct{ flag, path string }{{"--worker", o.worker}, {"--prometheus", o.prometheus}, {"--dashboard", o.dashboard}, {"--rules", o.rules}} {
		if _, err := os.Stat(f.path); err != nil {
			return o, usageError{fmt.Errorf("invalid %s %s: %v", f.flag, f.path, err)}
		}
	}
	return o, nil
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	dash, err := loadDashboard(o.dashboard)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "dashshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	say("starting Azurite")
	az, err := azuritetest.Start(ctx)
	if err != nil {
		return err
	}
	defer az.Stop()

	c := &cluster{bin: o.worker, conn: az.ConnectionString(), dir: dir, shards: o.shards}
	defer c.stopAll()
	for i := 1; i <= o.workers; i++ {
		if err := c.start(fmt.Sprintf("w%d", i)); err != nil {
			return err
		}
	}
	prom, err := startPrometheus(ctx, o.prometheus, o.rules, dir, c.targets())
	if err != nil {
		return err
	}
	defer prom.stop()

	from := time.Now()
	if err := scenario(ctx, c, o.settle); err != nil {
		return err
	}
	to := time.Now()
	say("querying Prometheus for %d panels over %s", len(dash.Panels), to.Sub(from).Round(time.Second))
	data, err := queryPanels(ctx, prom.url, dash, from, to)
	if err != nil {
		return err
	}
	// The shipped rules ran in this Prometheus the whole time: say which
	// alerts went pending or fired (none should, for faults the design
	// recovers from within its bounds).
	alerts, err := promQuery(ctx, prom.url, "ALERTS", from, to, 2*time.Second)
	if err != nil {
		return err
	}
	if len(alerts) == 0 {
		say("alerts during the run: none pending or firing")
	}
	for _, a := range alerts {
		say("alert during the run: %s %s %s at %s", a.labels["alertname"], a.labels["alertstate"], a.labels["instance"], spans(a.points))
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(o.out)
	if err != nil {
		return err
	}
	if err := drawDashboard(f, dash, data, from, to); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	say("wrote %s", o.out)
	return nil
}

// scenario drives the cluster through the events the dashboard shows: a
// crash of the leader, a graceful handover, a paused follower.
func scenario(ctx context.Context, c *cluster, settle time.Duration) error {
	leader, err := c.awaitLeader(ctx, "", 30*time.Second)
	if err != nil {
		return err
	}
	say("leader %s; letting the cluster settle for %s", leader, settle)
	if err := sleep(ctx, settle); err != nil {
		return err
	}

	say("SIGKILL the leader %s", leader)
	c.signal(leader, syscall.SIGKILL)
	next, err := c.awaitLeader(ctx, leader, 40*time.Second)
	if err != nil {
		return err
	}
	say("new leader %s; restarting %s", next, leader)
	if err := c.start(leader); err != nil {
		return err
	}
	if err := sleep(ctx, settle); err != nil {
		return err
	}

	say("SIGTERM the leader %s (graceful handover)", next)
	c.signal(next, syscall.SIGTERM)
	third, err := c.awaitLeader(ctx, next, 20*time.Second)
	if err != nil {
		return err
	}
	if err := c.wait(next, 20*time.Second); err != nil {
		return err
	}
	say("new leader %s; restarting %s", third, next)
	if err := c.start(next); err != nil {
		return err
	}
	if err := sleep(ctx, settle); err != nil {
		return err
	}

	follower := c.follower(third)
	say("SIGSTOP the follower %s for 25s (its shards move), then SIGCONT", follower)
	c.signal(follower, syscall.SIGSTOP)
	if err := sleep(ctx, 25*time.Second); err != nil {
		c.signal(follower, syscall.SIGCONT)
		return err
	}
	c.signal(follower, syscall.SIGCONT)
	say("letting the cluster settle for %s", settle)
	return sleep(ctx, settle)
}

func say(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// getJSON GETs u into v with a deadline.
func getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}

// promQuery is one query_range call against base.
func promQuery(ctx context.Context, base, expr string, from, to time.Time, step time.Duration) ([]series, error) {
	q := url.Values{}
	q.Set("query", expr)
	q.Set("start", fmt.Sprintf("%.3f", float64(from.UnixMilli())/1000))
	q.Set("end", fmt.Sprintf("%.3f", float64(to.UnixMilli())/1000))
	q.Set("step", fmt.Sprintf("%gs", step.Seconds()))
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, base+"/api/v1/query_range?"+q.Encode(), &r); err != nil {
		return nil, err
	}
	out := make([]series, 0, len(r.Data.Result))
	for _, res := range r.Data.Result {
		s := series{labels: res.Metric}
		for _, v := range res.Values {
			ts, _ := v[0].(float64)
			str, _ := v[1].(string)
			var f float64
			if _, err := fmt.Sscan(str, &f); err != nil {
				continue
			}
			s.points = append(s.points, point{t: time.UnixMilli(int64(ts * 1000)), v: f})
		}
		out = append(out, s)
	}
	return out, nil
}

// spans lists the stretches of consecutive points (2 s apart) as
// "15:04:05–15:04:19".
func spans(ps []point) string {
	var out []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1].t.Sub(ps[j].t) <= 3*time.Second {
			j++
		}
		out = append(out, ps[i].t.UTC().Format("15:04:05")+"–"+ps[j].t.UTC().Format("15:04:05"))
		i = j + 1
	}
	return strings.Join(out, ", ")
}
