package lockapi

import "testing"

// The lock service exports blobleader_build_info as the worker does.
func TestMetrics_BuildInfo(t *testing.T) {
	families, err := NewMetrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "blobleader_build_info" && f.GetMetric()[0].GetGauge().GetValue() == 1 {
			return
		}
	}
	t.Fatal("no blobleader_build_info among the lock service's metrics")
}
