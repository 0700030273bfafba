//go:build azure

package azure

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Environment variables of the suite (docs/testing-on-azure.md).
const (
	EnvLocation  = "AZURE_LOCATION"               // region, default eastus
	EnvWorkers   = "BLOBLEADER_AZURE_WORKERS"     // worker groups, default 3
	EnvClockSkew = "BLOBLEADER_AZURE_CLOCK_SKEW"  // checker tolerance, default 250ms
	EnvOperator  = "BLOBLEADER_AZURE_OPERATOR_ID" // object id the harness runs as (default: from the token)
	EnvRequired  = "BLOBLEADER_AZURE_REQUIRED"    // "1": fail instead of skip when something is missing (make test-azure)
	EnvWorkDir   = "BLOBLEADER_AZURE_WORKDIR"     // stage data and the Terraform copy; default out/azure-suite
	EnvTFVars    = "BLOBLEADER_AZURE_TF_VARS"     // extra Terraform variables as JSON, e.g. {"zones":[]}
	EnvARMBudget = "BLOBLEADER_AZURE_ARM_BUDGET"  // budget of one ARM fault operation (stop, start, rule change), default 15m
	EnvAlertMail = "BLOBLEADER_AZURE_ALERT_EMAIL" // the deployment's alert receiver, default DefaultAlertEmail
)

// DefaultAlertEmail receives the suite's alerts unless EnvAlertMail names
// someone: an address of a domain reserved for examples (RFC 2606), so a run
// pages nobody. The suite reads the alerts from Azure Monitor, not from mail.
const DefaultAlertEmail = "blobleader-azure-suite@example.com"

// DefaultARMBudget bounds one ARM fault operation: an ACI Start re-allocates
// the group and pulls two images through the managed identity (minutes), a
// network rule change takes a while to reach the storage front ends.
const DefaultARMBudget = 15 * time.Minute

// Env is what the suite needs from its environment.
type Env struct {
	SubscriptionID string
	Location       string
	Workers        int
	ClockSkew      time.Duration
	OperatorID     string
	Terraform      string
	WorkDir        string
	ExtraVars      string
	ARMBudget      time.Duration
	AlertEmail     string         // the action group's receiver (the alerts are deployed as users get them)
	Credential     CredentialPlan // how the harness authenticates (credential.go)
}

// Probe is how LoadEnv looks at the machine; tests replace it.
type Probe struct {
	Lookup   func(string) (string, bool)
	LookPath func(string) (string, error)
	// AzSignedIn reports whether `az account show` succeeds (a local
	// process; nothing is created).
	AzSignedIn func() bool
}

// HostProbe looks at the real environment.
func HostProbe() Probe {
	return Probe{
		Lookup:   os.LookupEnv,
		LookPath: exec.LookPath,
		AzSignedIn: func() bool {
			return exec.Command("az", "account", "show", "--only-show-errors", "-o", "none").Run() == nil
		},
	}
}

// LoadEnv checks everything the suite needs before anything is created and
// returns one error naming all that is missing.
func LoadEnv(p Probe) (Env, error) {
	get := func(k string) string { v, _ := p.Lookup(k); return strings.TrimSpace(v) }
	e := Env{
		SubscriptionID: get("ARM_SUBSCRIPTION_ID"),
		Location:       "eastus",
		Workers:        3,
		ClockSkew:      250 * time.Millisecond,
		OperatorID:     get(EnvOperator),
		Terraform:      "terraform",
		WorkDir:        get(EnvWorkDir),
		ExtraVars:      get(EnvTFVars),
		ARMBudget:      DefaultARMBudget,
		AlertEmail:     DefaultAlertEmail,
	}
	if v := get(EnvLocation); v != "" {
		e.Location = v
	}
	if v := get("TERRAFORM"); v != "" {
		e.Terraform = v
	}
	if v := get(EnvAlertMail); v != "" {
		e.AlertEmail = v
	}
	var bad, missing []string
	if v := get(EnvWorkers); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 20 {
			bad = append(bad, fmt.Sprintf("%s=%q (want 2-20 worker groups)", EnvWorkers, v))
		}
		e.Workers = n
	}
	if v := get(EnvClockSkew); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > 5*time.Second {
			bad = append(bad, fmt.Sprintf("%s=%q (want a Go duration from 0 to 5s, e.g. 250ms)", EnvClockSkew, v))
		}
		e.ClockSkew = d
	}
	if v := get(EnvARMBudget); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > 2*time.Hour {
			bad = append(bad, fmt.Sprintf("%s=%q (want a Go duration from 1m to 2h, e.g. 15m)", EnvARMBudget, v))
		}
		e.ARMBudget = d
	}
	if !strings.Contains(e.AlertEmail, "@") || strings.ContainsAny(e.AlertEmail, " \t") {
		bad = append(bad, fmt.Sprintf("%s=%q (want one e-mail address)", EnvAlertMail, e.AlertEmail))
	}
	if e.SubscriptionID == "" {
		missing = append(missing, "ARM_SUBSCRIPTION_ID (export ARM_SUBSCRIPTION_ID=$(az account show --query id -o tsv))")
	}
	// Credentials: the forms Terraform's azurerm reads from ARM_*, in its
	// order (credential.go), else the Azure CLI signed in. Only look at az
	// when the cheap checks pass, and never reach the network from here.
	plan, err := PlanCredential(get)
	e.Credential = plan
	switch {
	case err != nil:
		missing = append(missing, strings.TrimPrefix(err.Error(), ErrCredential.Error()+": "))
	case plan.Kind == CredAzureCLI:
		if _, err := p.LookPath("az"); err != nil {
			missing = append(missing, "Azure credentials (az login with the Azure CLI on PATH, or ARM_CLIENT_ID + ARM_TENANT_ID with ARM_CLIENT_SECRET, ARM_CLIENT_CERTIFICATE_PATH or ARM_USE_OIDC=true)")
		} else if e.SubscriptionID != "" && !p.AzSignedIn() {
			missing = append(missing, "Azure credentials (az is not signed in: run az login)")
		}
	}
	if _, err := p.LookPath(e.Terraform); err != nil {
		missing = append(missing, fmt.Sprintf("%s (Terraform >= 1.11 on PATH, or set TERRAFORM)", e.Terraform))
	}
	if _, err := p.LookPath("go"); err != nil {
		missing = append(missing, "go (builds the worker and sidecar images)")
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing: "+strings.Join(missing, "; "))
	}
	if len(bad) > 0 {
		parts = append(parts, "invalid: "+strings.Join(bad, "; "))
	}
	if len(parts) > 0 {
		return e, fmt.Errorf("test-azure: cannot run, nothing was created; %s", strings.Join(parts, "; "))
	}
	return e, nil
}
