//go:build azure

// Command verify-azure checks, on a real deployment, every assumption the
// offline tests cannot (docs/testing-on-azure.md, "make verify-azure"): the
// resource providers are registered, the groups' log route exists (ACI's
// diagnostic-settings preview), the workers' and lock replicas' lines
// arrive, the log table and each column the alerts query exist, each alert
// query runs, the role assignments have propagated. It prints one line per assumption
// (PASS, FAIL or SKIP with its evidence), writes verify-azure.md and .json
// into --out, and exits 1 when any assumption is false, 2 on bad input.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/test/azure"
)

func main() {
	tfDir := flag.String("tf-dir", "infra", "the deployment's Terraform root (its state and outputs; terraform.tf and alerts/ are read from it)")
	out := flag.String("out", "out/verify-azure", "directory for verify-azure.md and verify-azure.json")
	logWait := flag.Duration("log-wait", 15*time.Minute, "how long to wait for the workers' first lines in the log table (Microsoft: up to 10 minutes)")
	flag.Parse()
	if *logWait < time.Minute || *logWait > 2*time.Hour {
		fail2("--log-wait must be between 1m and 2h, got %v", *logWait)
	}
	sub := os.Getenv("ARM_SUBSCRIPTION_ID")
	plan, err := azure.PlanCredential(func(k string) string { return os.Getenv(k) })
	if sub == "" || err != nil {
		fail2("verify-azure: cannot run, nothing was checked; missing: %s", missing(sub, err))
	}
	cred, err := azure.NewCredential(plan)
	if err != nil {
		fail2("verify-azure: %v", err)
	}
	tf := os.Getenv("TERRAFORM")
	if tf == "" {
		tf = "terraform"
	}
	outputs, err := exec.Command(tf, "-chdir="+*tfDir, "output", "-json").Output()
	if err != nil {
		fail2("verify-azure: terraform output -json in %s: %v (deploy first: make deploy)", *tfDir, err)
	}
	target, leaseURL, err := azure.TargetFromOutputs(outputs, *tfDir)
	if err != nil {
		fail2("verify-azure: %v", err)
	}
	target.LogWait = *logWait
	if leaseURL != "" {
		lc, err := container.NewClient(leaseURL, cred, nil)
		if err != nil {
			fail2("verify-azure: %v", err)
		}
		target.DataProbe = func(ctx context.Context) error { _, err := lc.GetProperties(ctx, nil); return err }
	}
	providers, err := armresources.NewProvidersClient(sub, cred, nil)
	if err != nil {
		fail2("verify-azure: %v", err)
	}
	resources, err := armresources.NewClient(sub, cred, nil)
	if err != nil {
		fail2("verify-azure: %v", err)
	}
	v := &azure.Verifier{Logs: azure.NewLogsClient(cred, nil), Providers: providers, Resources: resources, ARM: azure.NewARMClient(cred, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), *logWait+10*time.Minute)
	defer cancel()
	started := time.Now()
	as := v.Run(ctx, target)
	failed := 0
	for _, a := range as {
		fmt.Println(a.Line())
		if a.Verdict == azure.Fail {
			failed++
		}
	}
	md, err := azure.WriteVerifyReport(*out, started, target, as)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-azure: report: %v\n", err)
		os.Exit(1)
	}
	abs, _ := filepath.Abs(md)
	fmt.Printf("verify-azure: %d assumptions, %d failed; report %s\n", len(as), failed, abs)
	if failed > 0 {
		os.Exit(1)
	}
}

func missing(sub string, credErr error) string {
	var m []string
	if sub == "" {
		m = append(m, "ARM_SUBSCRIPTION_ID (export ARM_SUBSCRIPTION_ID=$(az account show --query id -o tsv))")
	}
	if credErr != nil {
		m = append(m, credErr.Error())
	}
	return strings.Join(m, "; ")
}

func fail2(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}
