//go:build azure

// Command preflight checks what `make test-azure` needs before anything is
// created: it prints one line naming everything that is missing and exits 2,
// or prints what the suite will use and exits 0.
package main

import (
	"fmt"
	"os"

	"github.com/blobleader/blobleader/test/azure"
)

func main() {
	env, err := azure.LoadEnv(azure.HostProbe())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("test-azure: subscription %s, region %s, %d workers, clock skew %v, ARM budget %v, credentials: %s\n",
		env.SubscriptionID, env.Location, env.Workers, env.ClockSkew, env.ARMBudget, env.Credential.Kind)
}
