//go:build azure

package azure

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	acifake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2/fake"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
)

// slowGroups is an ARM container-groups endpoint whose groups take `takes`
// to reach Stopped or Running after a Stop or Start, as ACI's do (a Start
// re-allocates the group and pulls both images again).
func slowGroups(t *testing.T, takes time.Duration, names ...string) *armcontainerinstance.ContainerGroupsClient {
	t.Helper()
	type st struct {
		state string
		at    time.Time
	}
	var mu sync.Mutex
	groups := map[string]*st{}
	for _, n := range names {
		groups[n] = &st{state: chaos.ACIRunning}
	}
	srv := acifake.ContainerGroupsServer{
		Get: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientGetOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientGetResponse], errResp azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			g, ok := groups[name]
			if !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			state := "Pending"
			if time.Now().After(g.at) {
				state = g.state
			}
			var r armcontainerinstance.ContainerGroupsClientGetResponse
			r.Properties = &armcontainerinstance.ContainerGroupPropertiesProperties{InstanceView: &armcontainerinstance.ContainerGroupPropertiesInstanceView{State: &state}}
			resp.SetResponse(http.StatusOK, r, nil)
			return
		},
		Stop: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientStopOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientStopResponse], errResp azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			groups[name].state, groups[name].at = chaos.ACIStopped, time.Now().Add(takes)
			resp.SetResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStopResponse{}, nil)
			return
		},
		BeginStart: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientBeginStartOptions) (resp azfake.PollerResponder[armcontainerinstance.ContainerGroupsClientStartResponse], errResp azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			groups[name].state, groups[name].at = chaos.ACIRunning, time.Now().Add(takes)
			resp.SetTerminalResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStartResponse{}, nil)
			return
		},
	}
	c, err := armcontainerinstance.NewContainerGroupsClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: acifake.NewContainerGroupsServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The shared scenarios give Inject and Remove one minute, sized for local
// processes. On ACI a Start re-allocates the group and pulls two images, so
// the Azure backend runs process faults under its own budget (minutes by
// default, BLOBLEADER_AZURE_ARM_BUDGET) and reports how long each ARM
// operation took.
func TestOffline_ProcessFaultsRunUnderTheARMBudgetAndAreTimed(t *testing.T) {
	groups := &fakeGroups{state: map[string]string{"ci-w-01": chaos.ACIRunning}}
	c := testCluster(t, groups, nil)
	c.cfg.GroupsClient = slowGroups(t, 300*time.Millisecond, "ci-w-01")
	c.cfg.ARMBudget = 10 * time.Second
	var logged []string
	c.cfg.Logf = func(format string, args ...any) { logged = append(logged, format) }
	w := c.Workers()[0]
	crash := &chaos.Crash{Restart: true}

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // shorter than the group takes
	defer cancel()
	if err := c.Inject(short, crash, w); err != nil {
		t.Fatalf("crash under a caller deadline shorter than ACI takes: %v; the ARM budget must apply", err)
	}
	short2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := c.Remove(short2, crash); err != nil {
		t.Fatalf("heal (Start) under a short caller deadline: %v", err)
	}
	ops := c.ARMOps()
	if len(ops) != 2 || ops[0].Op != "stop" || ops[1].Op != "start" || ops[0].Target != "ci-w-01" {
		t.Fatalf("ARM operations %+v, want stop and start of ci-w-01", ops)
	}
	for _, op := range ops {
		if op.Took < 300*time.Millisecond || op.Err != "" {
			t.Errorf("%s took %v (err %q), want at least the 300ms the group took", op.Op, op.Took, op.Err)
		}
	}
	found := false
	for _, f := range logged {
		found = found || strings.Contains(f, "arm:")
	}
	if !found {
		t.Errorf("no ARM operation was logged: %q", logged)
	}

	// The budget still bounds a group that never gets there.
	c.cfg.GroupsClient = slowGroups(t, time.Hour, "ci-w-01")
	c.cfg.ARMBudget = 200 * time.Millisecond
	if err := c.Inject(context.Background(), &chaos.Crash{}, w); err == nil || !strings.Contains(err.Error(), "ARM budget") {
		t.Fatalf("a stop that never completes: %v, want an error naming the ARM budget", err)
	}
}

func TestOffline_EnvARMBudget(t *testing.T) {
	base := map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_CLIENT_ID": "c", "ARM_TENANT_ID": "t", "ARM_CLIENT_SECRET": "x"}
	path := map[string]bool{"go": true, "terraform": true}
	env, err := LoadEnv((&fakeHost{env: base, path: path}).probe())
	if err != nil || env.ARMBudget < 10*time.Minute {
		t.Fatalf("default ARM budget %v (%v), want minutes (an ACI Start pulls two images)", env.ARMBudget, err)
	}
	for _, bad := range []string{"soon", "10s", "3h"} {
		e := map[string]string{EnvARMBudget: bad}
		for k, v := range base {
			e[k] = v
		}
		if _, err := LoadEnv((&fakeHost{env: e, path: path}).probe()); err == nil || !strings.Contains(err.Error(), EnvARMBudget) {
			t.Errorf("%s=%s: %v, want an error naming it", EnvARMBudget, bad, err)
		}
	}
}

// On Azure the graceful stop is graceful by construction (the worker is
// asked through its control endpoint and SIGTERMs itself), so a scenario
// that stopped the leader gracefully must find its `released` event: the
// crash bound is no fallback.
func TestOffline_GracefulStopsMustRelease(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	graceful := checker.Fault{Kind: checker.FaultGraceful, Target: "w1", Start: t0.Add(time.Minute)}
	released := checker.Failover{Kind: checker.FaultGraceful, Injected: graceful.Start, Basis: checker.BasisReleased}
	fellBack := checker.Failover{Kind: checker.FaultGraceful, Injected: graceful.Start, Basis: checker.BasisLastRenew + " (no released event)"}
	earlier := checker.Failover{Kind: checker.FaultGraceful, Injected: t0, Basis: checker.BasisLastRenew + " (no released event)"}
	for _, tc := range []struct {
		name   string
		faults []checker.Fault
		fos    []checker.Failover
		ok     bool
	}{
		{"released", []checker.Fault{graceful}, []checker.Failover{released}, true},
		{"fell back to the crash bound", []checker.Fault{graceful}, []checker.Failover{fellBack}, false},
		{"graceful stops but none hit the leader", []checker.Fault{graceful}, nil, false},
		{"no graceful stop in this scenario", []checker.Fault{{Kind: checker.FaultCrash, Start: graceful.Start}}, nil, true},
		{"an earlier scenario's fallback is not this one's", []checker.Fault{graceful}, []checker.Failover{earlier, released}, true},
	} {
		err := RequireReleased(checker.Run{Faults: tc.faults}, checker.Result{Failovers: tc.fos}, t0.Add(30*time.Second))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
