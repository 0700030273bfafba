//go:build azure

package azure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
)

// GroupGetter reads a container group with its instance view
// (armcontainerinstance.ContainerGroupsClient; a fake in tests).
type GroupGetter interface {
	Get(ctx context.Context, resourceGroup, name string, opts *armcontainerinstance.ContainerGroupsClientGetOptions) (armcontainerinstance.ContainerGroupsClientGetResponse, error)
}

// DiagnosticRestartBudget bounds the wait for the restart a diagnostic
// setting causes: past it the suite goes on and says so.
const DiagnosticRestartBudget = 5 * time.Minute

// RestartWait is what WaitDiagnosticRestart saw of one group.
type RestartWait struct {
	Group    string
	Seen     bool
	After    time.Duration // from the start of the wait to the first look that showed it
	Evidence string
}

// WaitDiagnosticRestart waits, up to budget, until each group's worker
// container shows the restart that applying its diagnostic setting causes
// ("Applying diagnostic settings causes a container group to restart":
// Microsoft Learn, Container Instances monitoring data reference), so that
// no scenario meets it as an unexplained crash. A restart shows as a
// restart count above 0, a second Started event, or a start time later
// than the first one seen. A group that shows none within the budget is
// reported, not failed: the wait is for the scenarios' sake.
func WaitDiagnosticRestart(ctx context.Context, groups GroupGetter, resourceGroup string, names []string, budget, poll time.Duration,
	now func() time.Time, sleep func(context.Context, time.Duration) error) ([]RestartWait, error) {
	start := now()
	first := map[string]time.Time{}
	done := map[string]RestartWait{}
	for {
		for _, n := range names {
			if _, ok := done[n]; ok {
				continue
			}
			r, err := groups.Get(ctx, resourceGroup, n, nil)
			if err != nil {
				return nil, fmt.Errorf("azure: read %s while waiting out its diagnostic setting's restart: %w", n, err)
			}
			if ev := restarted(workerView(r.ContainerGroup), first, n); ev != "" {
				done[n] = RestartWait{Group: n, Seen: true, After: now().Sub(start).Round(time.Second), Evidence: ev}
			}
		}
		waited := now().Sub(start)
		if len(done) == len(names) || waited >= budget {
			out := make([]RestartWait, 0, len(names))
			for _, n := range names {
				w, ok := done[n]
				if !ok {
					w = RestartWait{Group: n, After: waited.Round(time.Second),
						Evidence: fmt.Sprintf("no restart within %v (Microsoft documents one when a diagnostic setting is applied; a scenario may meet it)", budget)}
				}
				out = append(out, w)
			}
			return out, nil
		}
		if err := sleep(ctx, poll); err != nil {
			return nil, err
		}
	}
}

// workerView is the worker container's instance view (nil if none yet).
func workerView(g armcontainerinstance.ContainerGroup) *armcontainerinstance.ContainerPropertiesInstanceView {
	if g.Properties == nil {
		return nil
	}
	for _, c := range g.Properties.Containers {
		if c != nil && c.Name != nil && *c.Name == "worker" && c.Properties != nil {
			return c.Properties.InstanceView
		}
	}
	return nil
}

// restarted says how the view shows a restart ("" if it does not); first
// keeps the first start time seen of each group.
func restarted(v *armcontainerinstance.ContainerPropertiesInstanceView, first map[string]time.Time, group string) string {
	if v == nil {
		return ""
	}
	if v.RestartCount != nil && *v.RestartCount > 0 {
		return fmt.Sprintf("restart count %d", *v.RestartCount)
	}
	started := 0
	for _, e := range v.Events {
		if e != nil && e.Name != nil && strings.EqualFold(*e.Name, "Started") {
			if e.Count != nil && *e.Count > 1 {
				started += int(*e.Count)
			} else {
				started++
			}
		}
	}
	if started >= 2 {
		return fmt.Sprintf("%d Started events", started)
	}
	if v.CurrentState == nil || v.CurrentState.StartTime == nil {
		return ""
	}
	at := *v.CurrentState.StartTime
	f, ok := first[group]
	switch {
	case !ok:
		first[group] = at
	case at.After(f):
		return fmt.Sprintf("started again at %s (first seen started %s)", at.UTC().Format(time.RFC3339), f.UTC().Format(time.RFC3339))
	}
	return ""
}
