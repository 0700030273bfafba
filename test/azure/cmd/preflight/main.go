//go:build azure

// Command preflight checks what `make test-azure` needs before anything is
// created: it prints one line naming everything that is missing and exits 2,
// or prints what the suite will use and exits 0. Once the environment is
// complete it asks Azure one question: whether the subscription lists a
// Container Instances feature about diagnostics that is not registered
// (the groups' diagnostic settings, the route the alerts read, need it);
// then it exits 2 naming the commands that enable it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/blobleader/blobleader/test/azure"
)

func main() {
	env, err := azure.LoadEnv(azure.HostProbe())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cred, err := azure.NewCredential(env.Credential)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test-azure: cannot run, nothing was created: %v\n", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	route, err := azure.DiagnosticsPreflight(ctx, azure.NewARMClient(cred, nil), env.SubscriptionID, env.ExtraVars)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("test-azure: subscription %s, region %s, %d workers, clock skew %v, ARM budget %v, alerts to %s, credentials: %s; diagnostic settings: %s\n",
		env.SubscriptionID, env.Location, env.Workers, env.ClockSkew, env.ARMBudget, env.AlertEmail, env.Credential.Kind, route)
}
