// Package monitoring checks the shipped Prometheus rules and Grafana
// dashboard (infra/monitoring/) against what the worker really exports and
// against Grafana's own dashboard schema (docs/operations.md, "Alerts").
package monitoring

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/status"
)

func monitoringDir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "infra", "monitoring")
}

func readDashboard(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(monitoringDir(t), "grafana", "blobleader.json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The dashboard decodes strictly under Grafana's dashboard schema (the
// foundation SDK's types are generated from it): no unknown or mistyped
// field anywhere, panel options and field config checked per panel type,
// every query a Prometheus query.
func TestDashboard_LoadsUnderGrafanasSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := decodeStrict(readDashboard(t), &d); err != nil {
		t.Fatalf("infra/monitoring/grafana/blobleader.json does not decode under Grafana's dashboard schema:\n%v", err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("dashboard fails the schema's validation: %v", err)
	}
	if d.Uid == nil || *d.Uid == "" || d.Title == nil || *d.Title == "" {
		t.Fatal("dashboard has no uid or title")
	}
	// The SDK decodes panels for their errors but leaves them unset (its
	// strict decoder returns an empty error list as a non-nil error), so the
	// panels are decoded one by one for the checks below.
	var raw struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(readDashboard(t), &raw); err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]bool{}
	var titles []string
	for i, pr := range raw.Panels {
		var panel dashboard.Panel
		if err := noError(panel.UnmarshalJSONStrict(pr)); err != nil {
			t.Fatalf("panel %d: %v", i, err)
		}
		if panel.Id == nil || ids[*panel.Id] {
			t.Fatalf("panel %q has no id or a duplicate one", deref(panel.Title))
		}
		ids[*panel.Id] = true
		titles = append(titles, deref(panel.Title))
		// The same goes for its queries: each one decoded strictly as a
		// Prometheus query.
		var targets struct {
			Targets []json.RawMessage `json:"targets"`
		}
		if err := json.Unmarshal(pr, &targets); err != nil {
			t.Fatal(err)
		}
		if len(targets.Targets) == 0 {
			t.Fatalf("panel %q has no query", deref(panel.Title))
		}
		for _, tr := range targets.Targets {
			var q prometheus.Dataquery
			if err := noError(q.UnmarshalJSONStrict(tr)); err != nil || q.Expr == "" {
				t.Fatalf("panel %q: query %s is not a Prometheus query with an expression: %v", deref(panel.Title), tr, err)
			}
		}
	}
	for _, want := range []string{"Leader per worker", "Term", "Failovers", "Renew latency", "Storage errors by code", "Shard ownership",
		"Lock service: ready", "Lock service: requests by outcome", "Lock service: grants and refusals", "Lock service: request latency"} {
		if !contains(titles, want) {
			t.Errorf("dashboard lacks the %q panel; it has %v", want, titles)
		}
	}
}

// A mistake a reader would not see must fail the schema check: a field
// Grafana does not know, and a value of the wrong type.
func TestDashboard_SchemaCheckCatchesMistakes(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	var doc map[string]any
	if err := json.Unmarshal(readDashboard(t), &doc); err != nil {
		t.Fatal(err)
	}
	mutate := []struct {
		name string
		f    func(m map[string]any)
	}{
		{"unknown panel field", func(m map[string]any) { panelOf(m, 0)["gridPosition"] = map[string]any{"x": 0} }},
		{"gridPos as a string", func(m map[string]any) { panelOf(m, 1)["gridPos"] = "0,0,4,6" }},
		{"unknown timeseries option", func(m map[string]any) { panelOf(m, 2)["options"].(map[string]any)["legendd"] = true }},
		{"refresh as a number", func(m map[string]any) { m["refresh"] = 10 }},
		{"unknown query field", func(m map[string]any) { panelOf(m, 3)["targets"].([]any)[0].(map[string]any)["exprr"] = "up" }},
	}
	for _, tc := range mutate {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			b, _ := json.Marshal(doc)
			_ = json.Unmarshal(b, &m)
			tc.f(m)
			b, _ = json.Marshal(m)
			var d dashboard.Dashboard
			err := decodeStrict(b, &d)
			if err == nil {
				err = d.Validate()
			}
			if err == nil {
				t.Fatalf("the schema check accepted a dashboard with %s", tc.name)
			}
		})
	}
}

// Every blobleader_* series the dashboard and the rules read is one the
// worker's or the lock service's own collectors export (the real
// registries, gathered).
func TestDashboardAndRules_ReadOnlyMetricsTheWorkerExports(t *testing.T) {
	exported := workerMetricNames(t)
	for n := range lockServiceMetricNames(t) {
		exported[n] = true
	}
	files := []string{"grafana/blobleader.json", "prometheus/blobleader.rules.yml", "prometheus/blobleader.rules_test.yml"}
	// A metric name not preceded by a recording rule's level prefix (job:…)
	// nor followed by its operation suffix (…:sum).
	name := regexp.MustCompile(`(^|[^:a-z_])(blobleader_[a-z_]+)($|[^:a-z_])`)
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(monitoringDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range name.FindAllStringSubmatch(string(raw), -1) {
			seen[m[2]] = true
		}
		if len(seen) == 0 {
			t.Fatalf("%s names no blobleader metric", f)
		}
		for n := range seen {
			if !exported[n] {
				t.Errorf("%s reads %s, which the worker does not export (it exports %v)", f, n, keys(exported))
			}
		}
	}
}

// workerMetricNames gathers the worker's collectors (the ones the binary
// registers) with one observation each, and returns every series name,
// histogram suffixes included.
func workerMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	m := status.NewMetrics(func() *election.Elector { return nil })
	m.ObserveRequest("renew", "201", 3*time.Millisecond)
	m.ObserveEvent(election.Event{Kind: election.EventStartedLeading})
	m.Registry.MustRegister(status.NewHealthGauge(func() error { return errors.New("wedged") }),
		status.NewShardOwnership(func() []int { return []int{0, 3} }), status.NewShardsUnowned(func() (int, bool) { return 1, true }))
	return gatheredNames(t, m.Registry, "blobleader_is_leader", "blobleader_healthy", "blobleader_shard_owned")
}

// lockServiceMetricNames gathers the lock service's registry (the one the
// binary serves on /metrics) with one observation of each kind.
func lockServiceMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	m := lockapi.NewMetrics()
	m.ObserveStorage("acquire", "201", 3*time.Millisecond)
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;",
		Container:        "locks", RequestTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mutex.DefaultConfig("monitoring-test")
	l, err := mutex.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lockapi.New(l, lockapi.Config{Store: "lockstore", MaxWait: time.Second, Metrics: m,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, cfg.JitteredRetryPeriod))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1.0-alpha1/lock/lockstore", "application/json",
		strings.NewReader(`{"resourceId":"r","lockOwner":"o","expiryInSeconds":15,"waitSeconds":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return gatheredNames(t, m.Registry, "blobleader_locks_ready", "blobleader_locks_requests_total", "blobleader_locks_wait_duration_seconds")
}

// gatheredNames is every series name reg exports, histogram suffixes
// included; want must be among them.
func gatheredNames(t *testing.T, reg *prom.Registry, want ...string) map[string]bool {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	for _, w := range want {
		if !names[w] {
			t.Fatalf("the registry lacks %s: %v", w, keys(names))
		}
	}
	return names
}

// decodeStrict is the SDK's strict decoding of a whole dashboard.
func decodeStrict(raw []byte, d *dashboard.Dashboard) error {
	return noError(d.UnmarshalJSONStrict(raw))
}

// noError turns the SDK's "no error", an empty (typed) BuildErrors, into nil.
func noError(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

func panelOf(m map[string]any, i int) map[string]any {
	return m["panels"].([]any)[i].(map[string]any)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
