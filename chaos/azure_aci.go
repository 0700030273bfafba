package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
)

// The process faults on Azure Container Instances (DESIGN §5, Azure column).
// A worker there is one container group; its election identity is the
// group's name. The faults act through ARM (armcontainerinstance), so they
// need no port on the group and no shell in the image.

// ErrUnsupported is returned by faults a backend cannot inject.
var ErrUnsupported = errors.New("chaos: fault not supported on this backend")

// ACIPauseReason is why Pause has no Azure counterpart: ACI offers no way to
// freeze a container's processes (no SIGSTOP, no cgroup freezer, no exec as
// root in a shell-less image), and stopping the group is a crash, not a
// pause. The Azure suite skips the pause scenario with this reason.
const ACIPauseReason = "ACI cannot freeze a running container (no SIGSTOP or cgroup freeze through ARM, and the worker image has no shell); stopping the group is the crash scenario, not a pause"

// ContainerGroup is one worker's container group, reached through ARM.
type ContainerGroup struct {
	Client        *armcontainerinstance.ContainerGroupsClient
	ResourceGroup string
	Name          string        // also the worker's election identity
	Poll          time.Duration // how often to read the group's state; default 2 s
}

// Group states as ARM reports them in the instance view.
const (
	ACIRunning = "Running"
	ACIStopped = "Stopped"
)

func (g *ContainerGroup) poll() time.Duration {
	if g.Poll > 0 {
		return g.Poll
	}
	return 2 * time.Second
}

func (g *ContainerGroup) check() error {
	if g == nil || g.Client == nil || g.ResourceGroup == "" || g.Name == "" {
		return fmt.Errorf("%w: needs a container group (client, resource group and name)", ErrNoTarget)
	}
	return nil
}

// State reads the group's instance view state ("Running", "Stopped", …;
// empty while ARM has none).
func (g *ContainerGroup) State(ctx context.Context) (string, error) {
	resp, err := g.Client.Get(ctx, g.ResourceGroup, g.Name, nil)
	if err != nil {
		return "", fmt.Errorf("chaos: get container group %s: %w", g.Name, err)
	}
	if p := resp.Properties; p != nil && p.InstanceView != nil && p.InstanceView.State != nil {
		return *p.InstanceView.State, nil
	}
	return "", nil
}

// WaitState polls until the group's state is want, or ctx ends.
func (g *ContainerGroup) WaitState(ctx context.Context, want string) error {
	tick := time.NewTicker(g.poll())
	defer tick.Stop()
	last := ""
	for {
		st, err := g.State(ctx)
		if err == nil && strings.EqualFold(st, want) {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "state " + st
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: container group %s not %s (last: %s): %w", g.Name, want, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func (g *ContainerGroup) pollOpts() *runtime.PollUntilDoneOptions {
	return &runtime.PollUntilDoneOptions{Frequency: g.poll()}
}

// AzureCrash stops a worker's container group with ContainerGroupsClient.Stop:
// ACI kills its containers and deallocates them. Remove starts the group again
// (BeginStart) when Restart is set; the worker comes back with the same
// identity (the group's name) and a fresh process.
type AzureCrash struct {
	Restart bool `json:"restart"` // start the group again on Remove

	Group *ContainerGroup `json:"-"`

	mu     sync.Mutex
	active bool
}

var _ Fault = (*AzureCrash)(nil)

func (f *AzureCrash) Kind() Kind { return KindCrash }

func (f *AzureCrash) Target() string {
	if f.Group == nil {
		return ""
	}
	return f.Group.Name
}

// Inject stops the group and returns once ARM reports it stopped.
func (f *AzureCrash) Inject(ctx context.Context) error {
	if err := f.Group.check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return fmt.Errorf("%w: crash of %s", ErrInjected, f.Group.Name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := f.Group.Client.Stop(ctx, f.Group.ResourceGroup, f.Group.Name, nil); err != nil {
		return fmt.Errorf("chaos: stop container group %s: %w", f.Group.Name, err)
	}
	f.active = true
	return f.Group.WaitState(ctx, ACIStopped)
}

// Remove starts the group again (when Restart is set) and returns once it
// runs.
func (f *AzureCrash) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	if f.Restart {
		if err := start(ctx, f.Group); err != nil {
			return err
		}
	}
	f.active = false
	return nil
}

func start(ctx context.Context, g *ContainerGroup) error {
	poller, err := g.Client.BeginStart(ctx, g.ResourceGroup, g.Name, nil)
	if err != nil {
		return fmt.Errorf("chaos: start container group %s: %w", g.Name, err)
	}
	if _, err := poller.PollUntilDone(ctx, g.pollOpts()); err != nil {
		return fmt.Errorf("chaos: start container group %s: %w", g.Name, err)
	}
	return g.WaitState(ctx, ACIRunning)
}

// AzureRestart restarts a worker's container group in place
// (ContainerGroupsClient.BeginRestart): ACI stops the containers — the worker
// gets SIGTERM, steps down and releases the lease — and starts them again.
// This is the graceful stop of DESIGN §5 on ACI. Inject returns once the
// group runs again, so Remove has nothing left to undo.
type AzureRestart struct {
	Group *ContainerGroup `json:"-"`

	mu sync.Mutex
}

var _ Fault = (*AzureRestart)(nil)

func (f *AzureRestart) Kind() Kind { return KindGraceful }

func (f *AzureRestart) Target() string {
	if f.Group == nil {
		return ""
	}
	return f.Group.Name
}

// Inject restarts the group and waits until it runs again.
func (f *AzureRestart) Inject(ctx context.Context) error {
	if err := f.Group.check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	poller, err := f.Group.Client.BeginRestart(ctx, f.Group.ResourceGroup, f.Group.Name, nil)
	if err != nil {
		return fmt.Errorf("chaos: restart container group %s: %w", f.Group.Name, err)
	}
	if _, err := poller.PollUntilDone(ctx, f.Group.pollOpts()); err != nil {
		return fmt.Errorf("chaos: restart container group %s: %w", f.Group.Name, err)
	}
	return f.Group.WaitState(ctx, ACIRunning)
}

// Remove is a no-op: the restart already brought the worker back.
func (f *AzureRestart) Remove(context.Context) error { return nil }
