package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
)

// The process faults on Azure Container Instances
// (docs/testing-on-azure.md#the-scenarios-on-azure). A worker there is one
// container group; its election identity is the group's name. The faults act
// through ARM (armcontainerinstance), so they need no port on the group and no
// shell in the image.

// ErrUnsupported is returned by faults a backend cannot inject.
var ErrUnsupported = errors.New("chaos: fault not supported on this backend")

// The graceful stop has no ARM form here: ARM's restart is not documented to
// send SIGTERM and `az container stop` is reported to SIGKILL
// (https://github.com/Azure/azure-cli/issues/16673). The Azure suite asks the
// worker itself through its chaos sidecar (chaos/sidecar.RemoteStop), which is
// graceful by construction.

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
	// OnOp, if set, hears about every ARM operation on the group: what it
	// was, and how long until its effect was seen (a real run's evidence of
	// what ACI does, e.g. how long a Start with two image pulls takes).
	OnOp func(ARMOp)
}

// ARMOp is one ARM operation of an Azure fault, timed from the call until
// its effect was observed (the group Stopped or Running, the network rule
// seen by the data-plane probe).
type ARMOp struct {
	Op     string        `json:"op"`     // stop, start, deny, allow
	Target string        `json:"target"` // container group or storage account
	Start  time.Time     `json:"start"`
	Took   time.Duration `json:"took_ns"`
	Err    string        `json:"error,omitempty"`
}

// timeOp runs f as operation op on target and reports it to onOp.
func timeOp(onOp func(ARMOp), op, target string, f func() error) error {
	start := time.Now()
	err := f()
	if onOp != nil {
		rec := ARMOp{Op: op, Target: target, Start: start, Took: time.Since(start)}
		if err != nil {
			rec.Err = err.Error()
		}
		onOp(rec)
	}
	return err
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

	place
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
	return f.putInAwaiting("crash of "+f.Group.Name, func() (stopped bool, err error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		err = timeOp(f.Group.OnOp, "stop", f.Group.Name, func() error {
			if _, err := f.Group.Client.Stop(ctx, f.Group.ResourceGroup, f.Group.Name, nil); err != nil {
				return fmt.Errorf("chaos: stop container group %s: %w", f.Group.Name, err)
			}
			stopped = true
			return f.Group.WaitState(ctx, ACIStopped)
		})
		return stopped, err
	})
}

// Remove starts the group again (when Restart is set) and returns once it
// runs.
func (f *AzureCrash) Remove(ctx context.Context) error {
	return f.takeOut(func() error {
		if f.Restart {
			return start(ctx, f.Group)
		}
		return nil
	})
}

// start starts the group and returns once it runs. On ACI a Start
// re-allocates the group and pulls both images again (through the managed
// identity), which takes minutes: callers give it a budget sized for that.
func start(ctx context.Context, g *ContainerGroup) error {
	return timeOp(g.OnOp, "start", g.Name, func() error {
		poller, err := g.Client.BeginStart(ctx, g.ResourceGroup, g.Name, nil)
		if err != nil {
			return fmt.Errorf("chaos: start container group %s: %w", g.Name, err)
		}
		if _, err := poller.PollUntilDone(ctx, g.pollOpts()); err != nil {
			return fmt.Errorf("chaos: start container group %s: %w", g.Name, err)
		}
		return g.WaitState(ctx, ACIRunning)
	})
}
