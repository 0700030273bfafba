package chaos

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2/fake"
)

// fakeACI is an ARM container-groups endpoint holding one state per group.
// Stop and Start change it (Start only after one "in progress" poll);
// Restart goes through Stopped and back to Running. Any call on a group it
// does not know fails with 404, so an unexpected call fails the test.
type fakeACI struct {
	mu     sync.Mutex
	state  map[string]string
	calls  []string
	frozen bool // Stop is accepted but the state never changes (a stuck group)
}

func (a *fakeACI) call(op, rg, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, op+" "+rg+"/"+name)
	_, ok := a.state[rg+"/"+name]
	return ok
}

func (a *fakeACI) set(rg, name, st string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.frozen {
		a.state[rg+"/"+name] = st
	}
}

func (a *fakeACI) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *fakeACI) client(t *testing.T) *armcontainerinstance.ContainerGroupsClient {
	t.Helper()
	srv := fake.ContainerGroupsServer{
		Get: func(_ context.Context, rg, name string, _ *armcontainerinstance.ContainerGroupsClientGetOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientGetResponse], errResp azfake.ErrorResponder) {
			if !a.call("get", rg, name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			a.mu.Lock()
			st := a.state[rg+"/"+name]
			a.mu.Unlock()
			var g armcontainerinstance.ContainerGroupsClientGetResponse
			g.Name = &name
			g.Properties = &armcontainerinstance.ContainerGroupPropertiesProperties{
				InstanceView: &armcontainerinstance.ContainerGroupPropertiesInstanceView{State: &st},
			}
			resp.SetResponse(http.StatusOK, g, nil)
			return
		},
		Stop: func(_ context.Context, rg, name string, _ *armcontainerinstance.ContainerGroupsClientStopOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientStopResponse], errResp azfake.ErrorResponder) {
			if !a.call("stop", rg, name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			a.set(rg, name, ACIStopped)
			resp.SetResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStopResponse{}, nil)
			return
		},
		BeginStart: func(_ context.Context, rg, name string, _ *armcontainerinstance.ContainerGroupsClientBeginStartOptions) (resp azfake.PollerResponder[armcontainerinstance.ContainerGroupsClientStartResponse], errResp azfake.ErrorResponder) {
			if !a.call("start", rg, name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			a.set(rg, name, ACIRunning)
			resp.AddNonTerminalResponse(http.StatusAccepted, nil)
			resp.SetTerminalResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStartResponse{}, nil)
			return
		},
		BeginRestart: func(_ context.Context, rg, name string, _ *armcontainerinstance.ContainerGroupsClientBeginRestartOptions) (resp azfake.PollerResponder[armcontainerinstance.ContainerGroupsClientRestartResponse], errResp azfake.ErrorResponder) {
			if !a.call("restart", rg, name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			a.set(rg, name, ACIRunning)
			resp.SetTerminalResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientRestartResponse{}, nil)
			return
		},
	}
	c, err := armcontainerinstance.NewContainerGroupsClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: fake.NewContainerGroupsServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newFakeACI(groups ...string) *fakeACI {
	a := &fakeACI{state: map[string]string{}}
	for _, g := range groups {
		a.state["rg-test/"+g] = ACIRunning
	}
	return a
}

func group(c *armcontainerinstance.ContainerGroupsClient, name string) *ContainerGroup {
	return &ContainerGroup{Client: c, ResourceGroup: "rg-test", Name: name, Poll: 5 * time.Millisecond}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOffline_AzureCrashStopsAndStartsTheGroup(t *testing.T) {
	aci := newFakeACI("ci-w-01", "ci-w-02")
	c := aci.client(t)
	f := &AzureCrash{Restart: true, Group: group(c, "ci-w-01")}
	if f.Kind() != KindCrash || f.Target() != "ci-w-01" {
		t.Fatalf("kind %s target %q, want crash on ci-w-01", f.Kind(), f.Target())
	}
	ctx := testCtx(t, 10*time.Second)
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := group(c, "ci-w-01").State(ctx); st != ACIStopped {
		t.Fatalf("after Inject the group is %q, want Stopped", st)
	}
	if err := f.Inject(ctx); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject: %v, want ErrInjected", err)
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := group(c, "ci-w-01").State(ctx); st != ACIRunning {
		t.Fatalf("after Remove the group is %q, want Running", st)
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatalf("Remove of a removed fault: %v", err)
	}
	want := []string{"stop rg-test/ci-w-01", "get rg-test/ci-w-01", "get rg-test/ci-w-01", "start rg-test/ci-w-01", "get rg-test/ci-w-01", "get rg-test/ci-w-01"}
	if got := aci.Calls(); !equal(got, want) {
		t.Fatalf("ARM calls %q, want %q (the other group is never touched)", got, want)
	}
}

func TestOffline_AzureCrashWithoutRestartLeavesTheGroupStopped(t *testing.T) {
	aci := newFakeACI("ci-w-01")
	c := aci.client(t)
	f := &AzureCrash{Group: group(c, "ci-w-01")}
	ctx := testCtx(t, 10*time.Second)
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := group(c, "ci-w-01").State(ctx); st != ACIStopped {
		t.Fatalf("group is %q after Remove without Restart, want Stopped", st)
	}
}

func TestOffline_AzureCrashHonoursTheDeadline(t *testing.T) {
	aci := newFakeACI("ci-w-01")
	aci.frozen = true // ARM accepts the stop but the group never reports Stopped
	f := &AzureCrash{Group: group(aci.client(t), "ci-w-01")}
	err := f.Inject(testCtx(t, 100*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Inject on a group that never stops: %v, want a deadline error", err)
	}
}

func TestOffline_AzureFaultsReportARMErrors(t *testing.T) {
	c := newFakeACI().client(t) // knows no group: every call is a 404
	ctx := testCtx(t, 5*time.Second)
	for _, f := range []Fault{&AzureCrash{Group: group(c, "missing")}} {
		err := f.Inject(ctx)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			t.Errorf("%s Inject on a missing group: %v, want the ARM 404", f.Kind(), err)
		}
	}
	if err := (&AzureCrash{}).Inject(ctx); !errors.Is(err, ErrNoTarget) {
		t.Errorf("crash without a group: %v, want ErrNoTarget", err)
	}
}
