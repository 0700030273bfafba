//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// EnvRehearsal set to 1 runs the rehearsals that need Terraform and the
// azurerm provider (make test-infra sets it, with its offline provider
// mirror in TF_CLI_CONFIG_FILE).
const EnvRehearsal = "BLOBLEADER_TF_REHEARSAL"

// TestRehearsal_SuitePlansTheCopiedInfra plans, with a mocked azurerm, the
// very directory the deploy stage applies (CopyInfra of infra/, lock file
// included) with the very variables it passes (TerraformVars, alerts on as
// users get them): stage 1, stage 2 with both images, and the shards
// stage's apply. A file the copy
// lacks, a variable it sets wrong or a rule it breaks fails here, not after
// twenty minutes of a paid run.
func TestRehearsal_SuitePlansTheCopiedInfra(t *testing.T) {
	if os.Getenv(EnvRehearsal) != "1" {
		t.Skipf("rehearsal: needs terraform and the azurerm provider; make test-infra runs it (%s=1)", EnvRehearsal)
	}
	dir := t.TempDir()
	if err := CopyInfra(repoRoot(t), dir); err != nil {
		t.Fatal(err)
	}
	lockHasHashes := lockRecordsHashes(t, filepath.Join(dir, ".terraform.lock.hcl"))
	if lockHasHashes {
		// The registry's hashes cannot match the provider built from source
		// for the offline checks; the copy is planned without them.
		if err := os.Remove(filepath.Join(dir, ".terraform.lock.hcl")); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Location: "swedencentral", Workers: 3}
	const operator = "55555555-5555-5555-5555-555555555555"
	stage1, err := TerraformVars(env, "abc123", operator, nil)
	if err != nil {
		t.Fatal(err)
	}
	images := &Images{
		Worker:  "crblabc123abc123.azurecr.io/blobleader/worker@sha256:" + strings.Repeat("1", 64),
		Sidecar: "crblabc123abc123.azurecr.io/blobleader/chaos@sha256:" + strings.Repeat("2", 64),
	}
	stage2, err := TerraformVars(env, "abc123", operator, images)
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]any{}
	for k, v := range stage2 {
		shards[k] = v
	}
	shards["shards"] = ShardScenarios()[0].Shards

	// With the alerts users get: the action group from stage 1, the rules
	// (each created without query validation) from stage 2.
	test := rehearsalMock + rehearsalRun("stage1", stage1, `length(azurerm_container_group.worker) == 0 && length(azurerm_monitor_action_group.alerts) == 1 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 0`) +
		rehearsalRun("stage2", stage2, `length(azurerm_container_group.worker) == 3 && alltrue([for g in azurerm_container_group.worker : length(g.container) == 2]) && length(azurerm_monitor_diagnostic_setting.groups) == 3 && length(azurerm_monitor_action_group.alerts) == 1 && length(azurerm_monitor_scheduled_query_rules_alert_v2.this) == 10 && alltrue([for r in azurerm_monitor_scheduled_query_rules_alert_v2.this : r.skip_query_validation])`) +
		rehearsalRun("shards", shards, `alltrue([for g in azurerm_container_group.worker : g.container[0].environment_variables["BLOBLEADER_SHARDS"] != ""])`)
	if err := os.MkdirAll(filepath.Join(dir, "tests", "suite"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "suite", "suite.tftest.hcl"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	terraformIn(t, ctx, dir, "init", "-backend=false", "-input=false", "-no-color")
	if !lockHasHashes {
		// The committed lock file (version and constraint, no hashes yet)
		// was accepted; init recorded the hashes of what it installed.
		b, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if !strings.Contains(string(b), `version     = "5.2.0"`) {
			t.Errorf("after init the copy's lock file does not lock azurerm 5.2.0:\n%s", b)
		}
	}
	out := terraformIn(t, ctx, dir, "test", "-no-color", "-test-directory=tests/suite")
	if !strings.Contains(out, "3 passed, 0 failed") {
		t.Errorf("terraform test of the suite's copy did not pass its three runs:\n%s", out)
	}
}

const rehearsalMock = `mock_provider "azurerm" {
  override_during = plan
  mock_data "azurerm_client_config" {
    defaults = {
      subscription_id = "00000000-0000-0000-0000-000000000001"
      tenant_id       = "00000000-0000-0000-0000-000000000002"
      object_id       = "00000000-0000-0000-0000-000000000003"
    }
  }
}
`

// rehearsalRun is one `run` block planning with vars (as the suite passes them to
// terraform with -var) and asserting cond.
func rehearsalRun(name string, vars map[string]any, cond string) string {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "\nrun %q {\n  command = plan\n  variables {\n", name)
	for _, k := range keys {
		v, _ := json.Marshal(vars[k]) // JSON is valid HCL expression syntax
		fmt.Fprintf(&b, "    %s = %s\n", k, v)
	}
	fmt.Fprintf(&b, "  }\n  assert {\n    condition     = %s\n    error_message = %q\n  }\n}\n", cond, "the "+name+" plan is not what the suite expects")
	return b.String()
}

func terraformIn(t *testing.T, ctx context.Context, dir string, args ...string) string {
	t.Helper()
	tf := os.Getenv("TERRAFORM")
	if tf == "" {
		tf = "terraform"
	}
	cmd := exec.CommandContext(ctx, tf, append([]string{"-chdir=" + dir}, args...)...)
	cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("terraform %s in the suite's copy: %v\n%s", args[0], err, b)
	}
	return string(b)
}

// lockRecordsHashes reports whether the lock file records any hash.
func lockRecordsHashes(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the suite's copy has no lock file: %v", err)
	}
	return strings.Contains(string(b), `"h1:`) || strings.Contains(string(b), `"zh:`)
}
