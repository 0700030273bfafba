//go:build azure

package azure

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// armTypes maps every azurerm resource type infra/ may use to the ARM
// resource type it creates. A type missing here fails the test: decide its
// resource provider (registered by terraform.tf) and the CI identity's
// actions (infra/ci) before using it.
var armTypes = map[string]string{
	"azurerm_resource_group":                         "Microsoft.Resources/subscriptions/resourceGroups",
	"azurerm_storage_account":                        "Microsoft.Storage/storageAccounts",
	"azurerm_storage_container":                      "Microsoft.Storage/storageAccounts",
	"azurerm_user_assigned_identity":                 "Microsoft.ManagedIdentity/userAssignedIdentities",
	"azurerm_role_assignment":                        "Microsoft.Authorization/roleAssignments",
	"azurerm_container_registry":                     "Microsoft.ContainerRegistry/registries",
	"azurerm_log_analytics_workspace":                "Microsoft.OperationalInsights/workspaces",
	"azurerm_container_group":                        "Microsoft.ContainerInstance/containerGroups",
	"azurerm_monitor_action_group":                   "Microsoft.Insights/actionGroups",
	"azurerm_monitor_scheduled_query_rules_alert_v2": "Microsoft.Insights/scheduledQueryRules",
	"azurerm_monitor_diagnostic_setting":             "Microsoft.Insights/diagnosticSettings",
}

// alwaysRegistered are the namespaces every subscription has registered
// (Azure Resource Manager's own); the CI identity gets role assignments
// through its constrained RBAC administrator assignment, not the custom role.
var alwaysRegistered = []string{"Microsoft.Resources", "Microsoft.Authorization"}

// TestOffline_ProvidersRegisteredAndPermitted: on a fresh subscription
// every resource provider infra/ creates resources of must be registered by
// the provider block (azurerm 5.x registers none by default: a create then
// fails with MissingSubscriptionRegistration), and the CI identity's custom
// role must allow registering it and writing its resources.
func TestOffline_ProvidersRegisteredAndPermitted(t *testing.T) {
	root := repoRoot(t)
	infra := filepath.Join(root, "infra")
	used := resourceTypes(t, infra)
	if len(used) == 0 {
		t.Fatal("no azurerm resource found in infra/*.tf: the check saw nothing")
	}
	registered := hclList(t, filepath.Join(infra, "terraform.tf"), "resource_providers_to_register")
	actions := hclList(t, filepath.Join(infra, "ci", "locals.tf"), "suite_actions")
	for _, rt := range used {
		arm, ok := armTypes[rt]
		if !ok {
			t.Errorf("infra/ uses %s, which this test does not know: add it to armTypes with its ARM type, register its provider in infra/terraform.tf and allow it in infra/ci/locals.tf", rt)
			continue
		}
		ns := arm[:strings.Index(arm, "/")]
		if slices.Contains(alwaysRegistered, ns) {
			continue
		}
		if !slices.Contains(registered, ns) {
			t.Errorf("infra/ creates %s (%s) but infra/terraform.tf does not register %s (resource_providers_to_register): a fresh subscription answers MissingSubscriptionRegistration", rt, arm, ns)
		}
		if !slices.Contains(actions, ns+"/register/action") {
			t.Errorf("the CI identity's role (infra/ci/locals.tf suite_actions) cannot register %s (%s/register/action)", ns, ns)
		}
		if !slices.Contains(actions, arm+"/*") && !slices.Contains(actions, arm+"/write") {
			t.Errorf("the CI identity's role (infra/ci/locals.tf suite_actions) cannot write %s (%s/* or /write), which infra/ creates with %s", arm, arm, rt)
		}
	}
}

// resourceTypes are the azurerm resource types declared in dir/*.tf.
func resourceTypes(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^resource "(azurerm_[a-z0-9_]+)"`)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// hclList is the list of strings assigned to name (`name = [ "a", "b" ]`)
// in file.
func hclList(t *testing.T, file, name string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\b` + name + `\s*=\s*\[(.*?)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no list %s", file, name)
	}
	var out []string
	for _, s := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
		out = append(out, string(s[1]))
	}
	return out
}
