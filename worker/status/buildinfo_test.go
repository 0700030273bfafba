package status

import (
	"runtime"
	"testing"

	"github.com/blobleader/blobleader/worker/election"
)

// blobleader_build_info is 1, labelled with the module's version, the Go
// version and the VCS revision the build recorded.
func TestMetrics_BuildInfo(t *testing.T) {
	m := NewMetrics(func() *election.Elector { return nil })
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "blobleader_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if f.GetMetric()[0].GetGauge().GetValue() != 1 || labels["goversion"] != runtime.Version() || labels["version"] == "" {
			t.Fatalf("blobleader_build_info = %v %v, want 1 with version and goversion %s", f.GetMetric()[0].GetGauge().GetValue(), labels, runtime.Version())
		}
		if _, ok := labels["revision"]; !ok {
			t.Fatalf("blobleader_build_info labels %v, want a revision label (empty when the build recorded none)", labels)
		}
		return
	}
	t.Fatal("no blobleader_build_info among the worker's metrics")
}
