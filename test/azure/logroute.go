//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Log routes (infra/variables.tf, log_route).
const (
	RouteDiagnosticSetting = "diagnostic_setting"
	RouteLegacy            = "legacy"
)

// LogRoute is how the container groups' lines reach the table the alerts
// read (terraform output log_route).
type LogRoute struct {
	Route             string `json:"route"`              // RouteDiagnosticSetting or RouteLegacy
	GroupColumn       string `json:"group_column"`       // the table's container-group column
	ContainerColumn   string `json:"container_column"`   // its container-name column ("" in the legacy table)
	DiagnosticSetting string `json:"diagnostic_setting"` // the groups' diagnostic setting ("" for legacy)
}

// The diagnostic categories the groups' settings enable (infra/locals.tf).
var logCategories = []string{"ContainerInstanceLog", "ContainerEvent"}

// API versions of the ARM reads below.
const (
	featuresAPI   = "2021-07-01"         // Microsoft.Features
	diagnosticAPI = "2021-05-01-preview" // Microsoft.Insights diagnosticSettings(Categories)
)

// Feature is a feature flag of a resource provider and its state.
type Feature struct {
	Name  string // e.g. Microsoft.ContainerInstance/<name>
	State string // Registered, NotRegistered, Registering, Pending, …
}

// PendingDiagnosticFeatures lists the subscription's Microsoft.ContainerInstance
// features whose name mentions diagnostics and that are not Registered,
// and how many features it listed. Microsoft documents ACI's diagnostic
// settings as a public preview that must be "enabled for a subscription"
// (Container Instances monitoring data reference) without naming the
// feature, so the name is whatever Azure lists here, never one guessed.
func PendingDiagnosticFeatures(ctx context.Context, arm ARMReader, subscription string) ([]Feature, int, error) {
	items, err := arm.List(ctx, "/subscriptions/"+subscription+"/providers/Microsoft.Features/providers/Microsoft.ContainerInstance/features", featuresAPI, nil)
	if err != nil {
		return nil, 0, err
	}
	var pending []Feature
	for _, raw := range items {
		var f struct {
			Name       string `json:"name"`
			Properties struct {
				State string `json:"state"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, len(items), fmt.Errorf("a feature of Microsoft.ContainerInstance is not JSON: %w", err)
		}
		if strings.Contains(strings.ToLower(f.Name), "diagnostic") && f.Properties.State != "Registered" {
			pending = append(pending, Feature{Name: f.Name, State: f.Properties.State})
		}
	}
	return pending, len(items), nil
}

// EnableFeatures says how to register the features and what else works.
func EnableFeatures(pending []Feature) string {
	var names, cmds []string
	for _, f := range pending {
		short := f.Name[strings.LastIndex(f.Name, "/")+1:]
		names = append(names, fmt.Sprintf("%s (%s)", short, f.State))
		cmds = append(cmds, "az feature register --namespace Microsoft.ContainerInstance --name "+short)
	}
	return fmt.Sprintf("the Container Instances feature %s is not registered in this subscription; enable it: %s, wait until az feature show says Registered, then az provider register -n Microsoft.ContainerInstance; or deploy with log_route = \"legacy\" (the alerts then read ContainerInstanceLog_CL)",
		strings.Join(names, ", "), strings.Join(cmds, "; "))
}

// DiagnosticsPreflight refuses, before anything is created, a deployment
// whose groups' diagnostic settings need a feature the subscription has
// not registered; extraVars is the suite's BLOBLEADER_AZURE_TF_VARS (a
// legacy log_route needs none). A listing that fails is not a refusal:
// make verify-azure checks the route once the groups exist.
func DiagnosticsPreflight(ctx context.Context, arm ARMReader, subscription, extraVars string) (string, error) {
	if routeOf(extraVars) == RouteLegacy {
		return "log_route legacy: no diagnostic settings to enable", nil
	}
	pending, listed, err := PendingDiagnosticFeatures(ctx, arm, subscription)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot list the Microsoft.ContainerInstance features (%v); the verify stage checks the diagnostic settings", err), nil
	case len(pending) > 0:
		return "", fmt.Errorf("test-azure: cannot run, nothing was created: the container groups' diagnostic settings (the route the alerts read) need %s (in %s)", EnableFeatures(pending), EnvTFVars)
	}
	return fmt.Sprintf("none of the %d Microsoft.ContainerInstance features about diagnostics is pending", listed), nil
}

// routeOf is the log_route in a JSON object of Terraform variables ("" if
// none or not JSON: LoadEnv's users validate it).
func routeOf(extraVars string) string {
	var v struct {
		LogRoute string `json:"log_route"`
	}
	_ = json.Unmarshal([]byte(extraVars), &v)
	return v.LogRoute
}

// rows is the KQL that selects, in the route's table, the rows of the
// groups' containers (any container of the groups in the legacy table,
// which has no container name).
func (t VerifyTarget) rows(groups []string, containers ...string) string {
	filter := fmt.Sprintf("%s in (dynamic(%s))", t.Route.GroupColumn, jsonList(groups))
	if t.Route.ContainerColumn != "" && len(containers) > 0 {
		filter = fmt.Sprintf("%s in (dynamic(%s)) and %s", t.Route.ContainerColumn, jsonList(containers), filter)
	}
	return t.Table + "\n| where " + filter
}

// route: the groups' lines have a way into the table the alerts read. For
// the diagnostic-setting route: no pending preview feature, and every
// group (workers and lock replicas) offers both categories and carries the
// setting, sending them to the deployment's workspace.
func (v *Verifier) route(ctx context.Context, t VerifyTarget) (string, error) {
	if t.Route.Route == RouteLegacy {
		return "", skipError{"log_route is legacy: no diagnostic settings; the alerts read " + t.Table + ", which the groups' workspace integration fills"}
	}
	if v.ARM == nil {
		return "", errors.New("no ARM reader to check the diagnostic settings with")
	}
	var ev []string
	pending, listed, err := PendingDiagnosticFeatures(ctx, v.ARM, t.Subscription)
	switch {
	case err != nil:
		ev = append(ev, fmt.Sprintf("the Microsoft.ContainerInstance features are not readable (%v)", oneLine(err.Error())))
	case len(pending) > 0:
		return "", fmt.Errorf("%s, and run make deploy again", EnableFeatures(pending))
	default:
		ev = append(ev, fmt.Sprintf("none of the %d Microsoft.ContainerInstance features about diagnostics is pending", listed))
	}
	var bad []string
	for _, id := range t.GroupIDs {
		if problem := v.groupSetting(ctx, id, t); problem != "" {
			bad = append(bad, problem)
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("%s; ACI diagnostic settings are a preview Microsoft enables per subscription (az feature list --namespace Microsoft.ContainerInstance -o table), or redeploy with TF_VAR_log_route=legacy", strings.Join(bad, "; "))
	}
	return fmt.Sprintf("%d groups offer %s and send them to the workspace through %s; %s", len(t.GroupIDs), strings.Join(logCategories, " and "), t.Route.DiagnosticSetting, strings.Join(ev, "; ")), nil
}

// groupSetting says what is wrong with one group's diagnostic route ("" if
// nothing).
func (v *Verifier) groupSetting(ctx context.Context, id string, t VerifyTarget) string {
	name := id[strings.LastIndex(id, "/")+1:]
	cats, err := v.ARM.List(ctx, id+"/providers/Microsoft.Insights/diagnosticSettingsCategories", diagnosticAPI, nil)
	if err != nil {
		return fmt.Sprintf("%s: its diagnostic categories are not readable (%s)", name, oneLine(err.Error()))
	}
	var offered []string
	for _, raw := range cats {
		var c struct{ Name string }
		if json.Unmarshal(raw, &c) == nil {
			offered = append(offered, c.Name)
		}
	}
	for _, want := range logCategories {
		if !slices.Contains(offered, want) {
			return fmt.Sprintf("%s offers the diagnostic categories %v, not %s", name, offered, want)
		}
	}
	b, err := v.ARM.Get(ctx, id+"/providers/Microsoft.Insights/diagnosticSettings/"+t.Route.DiagnosticSetting, diagnosticAPI)
	var ae *ARMError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return fmt.Sprintf("%s has no diagnostic setting %s", name, t.Route.DiagnosticSetting)
	}
	if err != nil {
		return fmt.Sprintf("%s: its diagnostic setting is not readable (%s)", name, oneLine(err.Error()))
	}
	var s struct {
		Properties struct {
			WorkspaceID string    `json:"workspaceId"`
			Logs        []diagLog `json:"logs"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Sprintf("%s: its diagnostic setting is not JSON", name)
	}
	if !strings.EqualFold(s.Properties.WorkspaceID, t.WorkspaceID) {
		return fmt.Sprintf("%s's diagnostic setting sends to %q, not the deployment's workspace", name, s.Properties.WorkspaceID)
	}
	for _, want := range logCategories {
		if !slices.Contains(s.Properties.Logs, diagLog{Category: want, Enabled: true}) {
			return fmt.Sprintf("%s's diagnostic setting does not enable %s", name, want)
		}
	}
	return ""
}

// diagLog is one category of a diagnostic setting.
type diagLog struct {
	Category string `json:"category"`
	Enabled  bool   `json:"enabled"`
}
