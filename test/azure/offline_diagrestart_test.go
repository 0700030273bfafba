//go:build azure

package azure

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
)

// groupViews answers Get with the worker container's instance view the
// function gives for the nth look at the group.
type groupViews map[string]func(n int) *armcontainerinstance.ContainerPropertiesInstanceView

type viewGetter struct {
	views groupViews
	looks map[string]int
}

func (g *viewGetter) Get(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientGetOptions) (armcontainerinstance.ContainerGroupsClientGetResponse, error) {
	g.looks[name]++
	var r armcontainerinstance.ContainerGroupsClientGetResponse
	r.Properties = &armcontainerinstance.ContainerGroupPropertiesProperties{Containers: []*armcontainerinstance.Container{
		{Name: to.Ptr("chaos"), Properties: &armcontainerinstance.ContainerProperties{InstanceView: &armcontainerinstance.ContainerPropertiesInstanceView{RestartCount: to.Ptr[int32](5)}}},
		{Name: to.Ptr("worker"), Properties: &armcontainerinstance.ContainerProperties{InstanceView: g.views[name](g.looks[name])}},
	}}
	return r, nil
}

// TestOffline_TheSuiteWaitsOutTheDiagnosticSettingsRestart: applying a
// diagnostic setting restarts the group (Microsoft Learn), so the deploy
// stage waits until each worker container shows it — a restart count, a
// second Started event, a later start time — and reports a group that
// shows none within the budget instead of waiting for ever; the sidecar's
// restarts are not the worker's.
func TestOffline_TheSuiteWaitsOutTheDiagnosticSettingsRestart(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	started := func(at time.Time) *armcontainerinstance.ContainerPropertiesInstanceView {
		return &armcontainerinstance.ContainerPropertiesInstanceView{RestartCount: to.Ptr[int32](0),
			CurrentState: &armcontainerinstance.ContainerState{State: to.Ptr("Running"), StartTime: &at},
			Events:       []*armcontainerinstance.Event{{Name: to.Ptr("Started"), Count: to.Ptr[int32](1)}}}
	}
	g := &viewGetter{looks: map[string]int{}, views: groupViews{
		// Restarted by the third look: a later start time.
		"w-01": func(n int) *armcontainerinstance.ContainerPropertiesInstanceView {
			if n < 3 {
				return started(t0)
			}
			return started(t0.Add(90 * time.Second))
		},
		// The restart counted by ACI.
		"w-02": func(n int) *armcontainerinstance.ContainerPropertiesInstanceView {
			v := started(t0)
			if n >= 2 {
				v.RestartCount = to.Ptr[int32](1)
			}
			return v
		},
		// Never restarts (the sidecar beside it does, which is not it).
		"w-03": func(int) *armcontainerinstance.ContainerPropertiesInstanceView { return started(t0) },
	}}
	clock := t0
	sleeps := 0
	got, err := WaitDiagnosticRestart(ctxT(t, time.Minute), g, "rg", []string{"w-01", "w-02", "w-03"}, 2*time.Minute, 30*time.Second,
		func() time.Time { return clock }, func(context.Context, time.Duration) error { clock = clock.Add(30 * time.Second); sleeps++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		seen bool
		ev   string
	}{"w-01": {true, "started again at 2026-11-28T10:01:30Z"}, "w-02": {true, "restart count 1"}, "w-03": {false, "no restart within 2m0s"}}
	for _, w := range got {
		if w.Seen != want[w.Group].seen || !strings.Contains(w.Evidence, want[w.Group].ev) {
			t.Errorf("%s: seen %v, %q; want %v, %q", w.Group, w.Seen, w.Evidence, want[w.Group].seen, want[w.Group].ev)
		}
	}
	if sleeps != 4 || g.looks["w-02"] != 2 {
		t.Errorf("slept %d times (want 4: a 2-minute budget, 30 s apart) and looked at w-02 %d times (want 2: not after it restarted)", sleeps, g.looks["w-02"])
	}
}
