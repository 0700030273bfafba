//go:build azure

package azure

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// TargetFromOutputs builds the VerifyTarget of a deployment from
// `terraform output -json` of its root (infraDir: the root, whose
// terraform.tf names the providers it registers and whose alerts/ hold
// the documented table schema). It also returns the lease container's URL
// for the caller's data probe ("" when the outputs name none).
func TargetFromOutputs(outputs []byte, infraDir string) (VerifyTarget, string, error) {
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(outputs, &raw); err != nil {
		return VerifyTarget{}, "", fmt.Errorf("terraform output -json: %w", err)
	}
	get := func(name string, into any) error {
		o, ok := raw[name]
		if !ok {
			return fmt.Errorf("terraform output has no %s (deploy with this checkout's infra/ first)", name)
		}
		if err := json.Unmarshal(o.Value, into); err != nil {
			return fmt.Errorf("terraform output %s: %w", name, err)
		}
		return nil
	}
	var t VerifyTarget
	var endpoint string
	var containers map[string]string
	var workerIDs, lockIDs []string
	for _, g := range []struct {
		name string
		into any
	}{
		{"log_analytics_workspace_guid", &t.Workspace}, {"log_analytics_workspace_id", &t.WorkspaceID}, {"log_table", &t.Table},
		{"log_route", &t.Route}, {"container_group_names", &t.Groups}, {"container_group_ids", &workerIDs},
		{"lock_group_names", &t.LockGroups}, {"lock_group_ids", &lockIDs},
		{"alert_queries", &t.Alerts}, {"role_assignment_ids", &t.RoleAssignments},
		{"storage_blob_endpoint", &endpoint}, {"container_names", &containers},
	} {
		if err := get(g.name, g.into); err != nil {
			return VerifyTarget{}, "", err
		}
	}
	if len(t.Groups) == 0 {
		return VerifyTarget{}, "", fmt.Errorf("terraform output names no worker groups: nothing to verify before stage 2 of the deploy")
	}
	t.GroupIDs = append(workerIDs, lockIDs...)
	// /subscriptions/<id>/resourceGroups/…: the subscription the features
	// are read in.
	if parts := strings.Split(t.WorkspaceID, "/"); len(parts) > 2 && strings.EqualFold(parts[1], "subscriptions") {
		t.Subscription = parts[2]
	}
	providers, err := RegisteredProviders(filepath.Join(infraDir, "terraform.tf"))
	if err != nil {
		return VerifyTarget{}, "", err
	}
	t.Providers = providers
	var queries []string
	for _, a := range t.Alerts {
		queries = append(queries, a.Query)
	}
	if t.Columns, err = AlertColumns(filepath.Join(infraDir, "alerts"), t.Table, queries); err != nil {
		return VerifyTarget{}, "", err
	}
	lease := ""
	if c := containers["leases"]; c != "" && endpoint != "" {
		lease = endpoint + c
	}
	return t, lease, nil
}

// RegisteredProviders are the namespaces in resource_providers_to_register
// of a terraform.tf.
func RegisteredProviders(terraformTF string) ([]string, error) {
	b, err := os.ReadFile(terraformTF)
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?s)\bresource_providers_to_register\s*=\s*\[(.*?)\]`).FindSubmatch(b)
	if m == nil {
		return nil, fmt.Errorf("%s: no resource_providers_to_register list", terraformTF)
	}
	var out []string
	for _, s := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
		out = append(out, string(s[1]))
	}
	return out, nil
}
