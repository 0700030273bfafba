// Command chaos-sidecar runs beside a blobleader worker in its Azure container
// group: a loopback-only toxiproxy proxy to the storage account that applies
// the fault plan the chaos harness writes into a control blob. See package
// github.com/blobleader/blobleader/chaos/sidecar and docs/testing-on-azure.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/blobleader/blobleader/chaos/sidecar"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := sidecar.Main(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	os.Exit(code)
}
