//go:build azure

package azure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	resfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3/fake"
)

// fakeWorkspace answers the Log Analytics query API from the query text:
// the first rule whose key the query contains answers it (status, body).
type fakeWorkspace struct {
	mu      sync.Mutex
	rules   []fakeAnswer
	queries []string
}

type fakeAnswer struct {
	contains string
	status   int
	body     string
}

func (f *fakeWorkspace) Do(req *http.Request) (*http.Response, error) {
	var in struct{ Query, Timespan string }
	b, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(b, &in); err != nil || !strings.HasSuffix(req.URL.Path, "/v1/workspaces/11111111-1111-1111-1111-111111111111/query") || req.Header.Get("Authorization") == "" {
		return nil, fmt.Errorf("fake workspace: unexpected request %s %s %s", req.Method, req.URL, b)
	}
	f.mu.Lock()
	f.queries = append(f.queries, in.Query)
	f.mu.Unlock()
	for _, r := range f.rules {
		if strings.Contains(in.Query, r.contains) {
			return &http.Response{StatusCode: r.status, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewBufferString(r.body)), Request: req}, nil
		}
	}
	return nil, fmt.Errorf("fake workspace: no answer for query %q", in.Query)
}

func table(cols []string, rows ...[]any) string {
	type col struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	var cs []col
	for _, c := range cols {
		cs = append(cs, col{Name: c, Type: "string"})
	}
	if rows == nil {
		rows = [][]any{}
	}
	b, _ := json.Marshal(map[string]any{"tables": []any{map[string]any{"name": "PrimaryResult", "columns": cs, "rows": rows}}})
	return string(b)
}

const sem0100 = `{"error":{"code":"BadArgumentError","message":"The request had some invalid properties","innererror":{"code":"SemanticError","message":"A semantic error occurred.","innererror":{"code":"SEM0100","message":"'ContainerInstanceLog' operator: Failed to resolve table or column expression named 'ContainerInstanceLog'"}}}}`

// healthyWorkspace answers as a deployment whose every assumption holds.
func healthyWorkspace(now time.Time) []fakeAnswer {
	schema := [][]any{}
	for _, c := range []string{"ContainerGroup", "ContainerName", "Message"} {
		schema = append(schema, []any{c, "string"})
	}
	schema = append(schema, []any{"TimeGenerated", "datetime"}, []any{"ContainerID", "string"})
	ts := now.Add(-3 * time.Minute).Format(time.RFC3339Nano)
	return []fakeAnswer{
		{"getschema", 200, table([]string{"ColumnName", "ColumnType"}, schema...)},
		{"summarize lines = count()", 200, table([]string{"ContainerGroup", "lines", "events", "first", "last"},
			[]any{"ci-bl-worker-01", 140, 138, ts, ts}, []any{"ci-bl-worker-02", 120, 120, ts, ts})},
		{`"storage_forbidden"`, 200, table([]string{"ContainerGroup", "refused", "last"},
			[]any{"ci-bl-worker-02", 6, now.Add(-40 * time.Minute).Format(time.RFC3339Nano)})},
		{"let gap_limit", 200, table([]string{"t", "identity", "gap_seconds"})},
		{"leaders_started", 200, table([]string{"leaders_started"})},
	}
}

// fakeARM answers the ARM reads verify-azure makes beyond the typed
// clients: the Container Instances features, each group's diagnostic
// categories and setting. It fails on any other path.
type fakeARM struct {
	features   []Feature       // the subscription's Microsoft.ContainerInstance features
	categories []string        // what every group offers
	settings   map[string]bool // group name -> has the setting (default true)
	workspace  string          // where the settings send
	listErr    error           // every listing fails with it
	reads      []string
}

func (f *fakeARM) List(_ context.Context, path, apiVersion string, _ url.Values) ([]json.RawMessage, error) {
	f.reads = append(f.reads, path)
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []json.RawMessage
	switch {
	case strings.HasSuffix(path, "/providers/Microsoft.Features/providers/Microsoft.ContainerInstance/features") && apiVersion == featuresAPI:
		for _, ft := range f.features {
			b, _ := json.Marshal(map[string]any{"name": ft.Name, "properties": map[string]string{"state": ft.State}})
			out = append(out, b)
		}
	case strings.HasSuffix(path, "/providers/Microsoft.Insights/diagnosticSettingsCategories") && apiVersion == diagnosticAPI:
		for _, c := range f.categories {
			b, _ := json.Marshal(map[string]any{"name": c, "properties": map[string]string{"categoryType": "Logs"}})
			out = append(out, b)
		}
	default:
		return nil, fmt.Errorf("fake ARM: unexpected list %s (%s)", path, apiVersion)
	}
	return out, nil
}

func (f *fakeARM) Get(_ context.Context, path, apiVersion string) ([]byte, error) {
	f.reads = append(f.reads, path)
	i := strings.Index(path, "/providers/Microsoft.Insights/diagnosticSettings/")
	if i < 0 || apiVersion != diagnosticAPI {
		return nil, fmt.Errorf("fake ARM: unexpected get %s (%s)", path, apiVersion)
	}
	group := path[strings.LastIndex(path[:i], "/")+1 : i]
	if has, ok := f.settings[group]; ok && !has {
		return nil, &ARMError{Status: http.StatusNotFound, Code: "ResourceNotFound", Message: "The diagnostic setting 'diag-bl-logs' doesn't exist."}
	}
	return json.Marshal(map[string]any{"properties": map[string]any{"workspaceId": f.workspace,
		"logs": []map[string]any{{"category": "ContainerInstanceLog", "enabled": true}, {"category": "ContainerEvent", "enabled": true}}}})
}

const verifyWorkspaceID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-bl/providers/Microsoft.OperationalInsights/workspaces/log-bl"

func healthyARM() *fakeARM {
	return &fakeARM{features: []Feature{{Name: "Microsoft.ContainerInstance/SomeOtherFeature", State: "NotRegistered"}},
		categories: []string{"ContainerInstanceLog", "ContainerEvent"}, workspace: verifyWorkspaceID}
}

func verifyTarget(dp func(context.Context) error) VerifyTarget {
	return VerifyTarget{
		Subscription: "00000000-0000-0000-0000-000000000000",
		Workspace:    "11111111-1111-1111-1111-111111111111",
		WorkspaceID:  verifyWorkspaceID,
		Table:        "ContainerInstanceLog",
		Route:        LogRoute{Route: RouteDiagnosticSetting, GroupColumn: "ContainerGroup", ContainerColumn: "ContainerName", DiagnosticSetting: "diag-bl-logs"},
		GroupIDs: []string{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-bl/providers/Microsoft.ContainerInstance/containerGroups/ci-bl-worker-01",
			"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-bl/providers/Microsoft.ContainerInstance/containerGroups/ci-bl-worker-02"},
		Groups:    []string{"ci-bl-worker-01", "ci-bl-worker-02"},
		Providers: []string{"Microsoft.ContainerInstance", "Microsoft.Insights", "Microsoft.Storage"},
		Columns:   map[string]string{"ContainerGroup": "string", "ContainerName": "string", "Message": "string", "TimeGenerated": "datetime"},
		Alerts: map[string]AlertQuery{
			"no_leader": {Query: "let workers = ContainerInstanceLog; let gap_limit = todouble(35); workers", Window: "PT15M"},
			"flapping":  {Query: "let workers = ContainerInstanceLog; workers | summarize leaders_started = count()", Window: "PT15M"},
		},
		RoleAssignments: map[string]string{"worker acr pull": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Authorization/roleAssignments/a1"},
		DataProbe:       dp,
		LogWait:         10 * time.Minute,
		LogPoll:         time.Minute,
	}
}

// newVerifier builds a Verifier on SDK fakes: the query API behind a fake
// transport, armresources' own fake servers for providers and GetByID.
func newVerifier(t *testing.T, now time.Time, answers []fakeAnswer, notRegistered string, reader *fakeARM) (*Verifier, *fakeWorkspace, *time.Duration) {
	t.Helper()
	ws := &fakeWorkspace{rules: answers}
	logs := NewLogsClient(&azfake.TokenCredential{}, &policy.ClientOptions{Transport: ws})
	provSrv := resfake.ProvidersServer{
		Get: func(ctx context.Context, ns string, _ *armresources.ProvidersClientGetOptions) (resp azfake.Responder[armresources.ProvidersClientGetResponse], errResp azfake.ErrorResponder) {
			state := "Registered"
			if ns == notRegistered {
				state = "NotRegistered"
			}
			resp.SetResponse(http.StatusOK, armresources.ProvidersClientGetResponse{Provider: armresources.Provider{Namespace: &ns, RegistrationState: &state}}, nil)
			return
		},
	}
	resSrv := resfake.Server{
		GetByID: func(ctx context.Context, id, apiVersion string, _ *armresources.ClientGetByIDOptions) (resp azfake.Responder[armresources.ClientGetByIDResponse], errResp azfake.ErrorResponder) {
			resp.SetResponse(http.StatusOK, armresources.ClientGetByIDResponse{GenericResource: armresources.GenericResource{
				ID: &id, Properties: map[string]any{"createdOn": now.Add(-52 * time.Minute).Format(time.RFC3339Nano)}}}, nil)
			return
		},
	}
	opts := func(tr policy.Transporter) *arm.ClientOptions {
		return &arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}}
	}
	prov, err := armresources.NewProvidersClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{}, opts(resfake.NewProvidersServerTransport(&provSrv)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := armresources.NewClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{}, opts(resfake.NewServerTransport(&resSrv)))
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	slept := new(time.Duration)
	v := &Verifier{Logs: logs, Providers: prov, Resources: res, ARM: reader,
		Now:   func() time.Time { return clock },
		Sleep: func(_ context.Context, d time.Duration) error { clock = clock.Add(d); *slept += d; return nil }}
	return v, ws, slept
}

func verdicts(as []Assumption) map[string]Assumption {
	m := map[string]Assumption{}
	for _, a := range as {
		m[a.Name] = a
	}
	return m
}

// TestOffline_VerifyPassesAHealthyDeployment: every assumption holds, each
// PASS line carries its evidence, and the report is written (the sample in
// docs/testing-on-azure.md comes from this run: BLOBLEADER_VERIFY_SAMPLE=dir).
func TestOffline_VerifyPassesAHealthyDeployment(t *testing.T) {
	now := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	v, ws, _ := newVerifier(t, now, healthyWorkspace(now), "", healthyARM())
	probed := false
	as := v.Run(ctxT(t, time.Minute), verifyTarget(func(context.Context) error { probed = true; return nil }))
	if len(as) != 6 {
		t.Fatalf("want 6 assumptions, got %d: %v", len(as), as)
	}
	for _, a := range as {
		if a.Verdict != Pass || a.Evidence == "" {
			t.Errorf("want PASS with evidence: %s", a.Line())
		}
	}
	m := verdicts(as)
	for name, want := range map[string]string{
		AssumeProviders: "3 of 3 Registered",
		AssumeRoute:     "2 groups offer ContainerInstanceLog and ContainerEvent and send them to the workspace through diag-bl-logs; none of the 1 Microsoft.ContainerInstance features about diagnostics is pending",
		AssumeTable:     "ContainerGroup, ContainerName, Message, TimeGenerated",
		AssumeLines:     "2 of 2 groups, 258 JSON event lines",
		AssumeQueries:   "2 of 2 ran: flapping quiet, no_leader quiet",
		AssumeRoles:     "the last 12m0s after the oldest assignment",
	} {
		if !strings.Contains(m[name].Evidence, want) {
			t.Errorf("%s: evidence %q lacks %q", name, m[name].Evidence, want)
		}
	}
	if !probed {
		t.Error("the caller's data access was not probed")
	}
	if len(ws.queries) < 5 {
		t.Errorf("only %d queries reached the workspace", len(ws.queries))
	}
	dir := t.TempDir()
	if s := os.Getenv("BLOBLEADER_VERIFY_SAMPLE"); s != "" {
		dir = s
	}
	md, err := WriteVerifyReport(dir, now, verifyTarget(nil), as)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	if !strings.Contains(string(b), "6 assumptions, 0 failed") {
		t.Errorf("report:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "verify-azure.json")); err != nil {
		t.Error(err)
	}
}

// TestOffline_VerifyNamesEachFalseAssumption: each false assumption is one
// FAIL line naming what is false, and the others are still checked.
func TestOffline_VerifyNamesEachFalseAssumption(t *testing.T) {
	now := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	override := func(over ...fakeAnswer) []fakeAnswer { return append(over, healthyWorkspace(now)...) }
	noSetting := healthyARM()
	noSetting.settings = map[string]bool{"ci-bl-worker-02": false}
	preview := healthyARM()
	preview.features = append(preview.features, Feature{Name: "Microsoft.ContainerInstance/ExampleDiagnosticsPreview", State: "NotRegistered"})
	noCategory := healthyARM()
	noCategory.categories = nil
	for _, tc := range []struct {
		name          string
		answers       []fakeAnswer
		notRegistered string
		arm           *fakeARM
		probe         error
		failed        string
		want          []string
		waited        time.Duration
	}{
		{name: "insights not registered", answers: healthyWorkspace(now), notRegistered: "Microsoft.Insights",
			failed: AssumeProviders, want: []string{"Microsoft.Insights is NotRegistered", "MissingSubscriptionRegistration"}},
		// Microsoft names no feature for ACI's diagnostic-settings preview:
		// the name here is a stand-in for whatever the subscription lists.
		{name: "diagnostic settings preview not registered", answers: healthyWorkspace(now), arm: preview,
			failed: AssumeRoute, want: []string{"ExampleDiagnosticsPreview (NotRegistered)", "az feature register --namespace Microsoft.ContainerInstance --name ExampleDiagnosticsPreview", "az provider register -n Microsoft.ContainerInstance", `log_route = "legacy"`}},
		{name: "a group without its diagnostic setting", answers: healthyWorkspace(now), arm: noSetting,
			failed: AssumeRoute, want: []string{"ci-bl-worker-02 has no diagnostic setting diag-bl-logs", "TF_VAR_log_route=legacy"}},
		{name: "no diagnostic categories offered", answers: healthyWorkspace(now), arm: noCategory,
			failed: AssumeRoute, want: []string{"ci-bl-worker-01 offers the diagnostic categories [], not ContainerInstanceLog"}},
		{name: "table missing", answers: override(fakeAnswer{"getschema", 400, sem0100}),
			failed: AssumeTable, want: []string{"table ContainerInstanceLog does not exist in the workspace (SEM0100)"}},
		{name: "column missing", answers: override(fakeAnswer{"getschema", 200, table([]string{"ColumnName", "ColumnType"}, []any{"ContainerGroup", "string"}, []any{"Message", "string"}, []any{"TimeGenerated", "datetime"})}),
			failed: AssumeTable, want: []string{"ContainerName (missing)"}},
		{name: "lines only in the legacy table", answers: override(
			fakeAnswer{"summarize lines = count()", 200, table([]string{"ContainerGroup", "lines", "events", "first", "last"})},
			fakeAnswer{"ContainerInstanceLog_CL", 200, table([]string{"Count"}, []any{512})}),
			failed: AssumeLines, waited: 10 * time.Minute,
			want: []string{"no JSON event line of ci-bl-worker-01, ci-bl-worker-02 in ContainerInstanceLog after 10m0s", "ContainerInstanceLog_CL has 512 of their lines", "the diagnostic setting", "TF_VAR_log_route=legacy"}},
		{name: "a query refused", answers: override(fakeAnswer{"leaders_started", 400, sem0100}),
			failed: AssumeQueries, want: []string{"1 of 2 queries refused: flapping:", "SEM0100"}},
		{name: "workers still refused", answers: override(fakeAnswer{`"storage_forbidden"`, 200, table([]string{"ContainerGroup", "refused", "last"}, []any{"ci-bl-worker-01", 30, now.Add(-time.Minute).Format(time.RFC3339Nano)})}),
			failed: AssumeRoles, want: []string{"ci-bl-worker-01 (last 1m0s ago)", "the oldest assignment is 52m0s old"}},
		{name: "caller cannot read", answers: healthyWorkspace(now), probe: fmt.Errorf("403 AuthorizationPermissionMismatch"),
			failed: AssumeRoles, want: []string{"the caller's own data access to the lease container fails 52m0s after the oldest assignment: 403 AuthorizationPermissionMismatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := tc.arm
			if reader == nil {
				reader = healthyARM()
			}
			v, _, slept := newVerifier(t, now, tc.answers, tc.notRegistered, reader)
			as := v.Run(ctxT(t, time.Minute), verifyTarget(func(context.Context) error { return tc.probe }))
			for _, a := range as {
				want := Pass
				if a.Name == tc.failed {
					want = Fail
				}
				if a.Verdict != want {
					t.Errorf("want %s: %s", want, a.Line())
				}
				if a.Verdict == Fail {
					for _, w := range tc.want {
						if !strings.Contains(a.Evidence, w) {
							t.Errorf("FAIL line lacks %q: %s", w, a.Line())
						}
					}
					if strings.Contains(a.Line(), "\n") {
						t.Errorf("FAIL is not one line: %q", a.Line())
					}
				}
			}
			if *slept != tc.waited {
				t.Errorf("slept %v, want %v (only the wait for lines may wait)", *slept, tc.waited)
			}
		})
	}
}

// TestOffline_AlertColumnsComeFromTheDocumentedSchema: verify-azure checks
// the columns the alert queries, as deployed, name, typed as tables.json
// documents them; the queries here are infra/alerts/*.kql filled for each
// route as infra/alerts.tf fills them.
func TestOffline_AlertColumnsComeFromTheDocumentedSchema(t *testing.T) {
	alerts := filepath.Join(repoRoot(t), "infra", "alerts")
	for _, tc := range []struct {
		table, group, container string
		want                    map[string]string
	}{
		{"ContainerInstanceLog", "ContainerGroup", "ContainerName", map[string]string{"ContainerGroup": "string", "ContainerName": "string", "Message": "string", "TimeGenerated": "datetime"}},
		{"ContainerInstanceLog_CL", "ContainerGroup_s", "", map[string]string{"ContainerGroup_s": "string", "Message": "string", "TimeGenerated": "datetime"}},
	} {
		filter := tc.group + ` in (dynamic(["w1"]))`
		if tc.container != "" {
			filter = tc.container + ` in ("worker", "locks") and ` + filter
		}
		fill := strings.NewReplacer("${table}", tc.table, "${filter}", filter, "${worker_filter}", filter, "${group_column}", tc.group)
		files, _ := filepath.Glob(filepath.Join(alerts, "*.kql"))
		var queries []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			queries = append(queries, fill.Replace(string(b)))
		}
		cols, err := AlertColumns(alerts, tc.table, queries)
		if err != nil {
			t.Fatal(err)
		}
		for c, typ := range tc.want {
			if cols[c] != typ {
				t.Errorf("%s column %s: %q, want %q (all: %v)", tc.table, c, cols[c], typ, cols)
			}
		}
		if len(cols) != len(tc.want) {
			t.Errorf("%s: columns %v, want exactly %v (_BilledSize and the others are documented but named by no query)", tc.table, cols, tc.want)
		}
	}
}

// TestOffline_VerifyTargetFromTheOutputs: make verify-azure reads the
// deployment from `terraform output -json` and infra/ itself: the workspace
// GUID (not the ARM id), the groups, the deployed queries, the role
// assignments, the providers terraform.tf registers.
func TestOffline_VerifyTargetFromTheOutputs(t *testing.T) {
	outputs := `{
  "log_analytics_workspace_guid": {"value": "11111111-1111-1111-1111-111111111111"},
  "log_analytics_workspace_id": {"value": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/log-bl"},
  "log_table": {"value": "ContainerInstanceLog"},
  "log_route": {"value": {"route": "diagnostic_setting", "group_column": "ContainerGroup", "container_column": "ContainerName", "diagnostic_setting": "diag-bl-logs"}},
  "container_group_names": {"value": ["ci-bl-worker-01", "ci-bl-worker-02"]},
  "container_group_ids": {"value": ["/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroups/ci-bl-worker-01", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroups/ci-bl-worker-02"]},
  "lock_group_names": {"value": ["bl-locks-01"]},
  "lock_group_ids": {"value": ["/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroups/bl-locks-01"]},
  "alert_queries": {"value": {"no_leader": {"query": "let lines = ContainerInstanceLog | where ContainerName in (\"worker\") and ContainerGroup in (dynamic([]));", "window": "PT15M"}}},
  "role_assignment_ids": {"value": {"worker acr pull": "/subscriptions/s/providers/Microsoft.Authorization/roleAssignments/a"}},
  "storage_blob_endpoint": {"value": "https://stbl.blob.core.windows.net/"},
  "container_names": {"value": {"leases": "leases", "history": "history"}}
}`
	target, lease, err := TargetFromOutputs([]byte(outputs), filepath.Join(repoRoot(t), "infra"))
	if err != nil {
		t.Fatal(err)
	}
	if target.Workspace != "11111111-1111-1111-1111-111111111111" || target.Table != "ContainerInstanceLog" || len(target.Groups) != 2 ||
		target.Alerts["no_leader"].Window != "PT15M" || len(target.RoleAssignments) != 1 || lease != "https://stbl.blob.core.windows.net/leases" {
		t.Errorf("target %+v, lease %q", target, lease)
	}
	if !strings.Contains(strings.Join(target.Providers, ","), "Microsoft.Insights") || target.Columns["ContainerName"] != "string" {
		t.Errorf("providers %v, columns %v: want infra/terraform.tf's list and the documented columns", target.Providers, target.Columns)
	}
	if target.Subscription != "s" || target.Route.DiagnosticSetting != "diag-bl-logs" || len(target.GroupIDs) != 3 || fmt.Sprint(target.LockGroups) != "[bl-locks-01]" {
		t.Errorf("target %+v: want the subscription from the workspace id, the route, the worker and lock groups and their ids", target)
	}
	if _, _, err := TargetFromOutputs([]byte(`{"log_table": {"value": "ContainerInstanceLog"}}`), filepath.Join(repoRoot(t), "infra")); err == nil || !strings.Contains(err.Error(), "log_analytics_workspace_guid") {
		t.Errorf("outputs of an older deployment: want an error naming the missing output, got %v", err)
	}
}

// TestOffline_VerifyAzureRefusesBadInput: the command's bad input (a flag
// out of range, no subscription) is one line naming it, exit 2, before
// anything is read from Azure.
func TestOffline_VerifyAzureRefusesBadInput(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "verify-azure")
	build := exec.Command("go", "build", "-tags", "azure", "-o", bin, "./cmd/verify-azure")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARM_") && !strings.HasPrefix(kv, "AZURE_") {
			env = append(env, kv)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-wait", "5s"}, "--log-wait must be between 1m and 2h, got 5s"},
		{nil, "verify-azure: cannot run, nothing was checked; missing: ARM_SUBSCRIPTION_ID"},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: want exit 2, got %v: %s", tc.args, err, out)
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: want one line with %q, got %q", tc.args, tc.want, out)
		}
	}
}

// TestOffline_VerifyTheLegacyRouteAndTheLockService: with log_route
// legacy there is no diagnostic setting to check (SKIP, saying why), and
// every read goes to ContainerInstanceLog_CL by ContainerGroup_s; the lock
// service's groups are looked for too, and one without a line is named.
func TestOffline_VerifyTheLegacyRouteAndTheLockService(t *testing.T) {
	now := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	ts := now.Add(-3 * time.Minute).Format(time.RFC3339Nano)
	legacy := func(locksSeen bool) []fakeAnswer {
		rows := [][]any{{"ci-bl-worker-01", 140, 138, ts, ts}, {"ci-bl-worker-02", 120, 120, ts, ts}}
		if locksSeen {
			rows = append(rows, []any{"bl-locks-01", 3, 1, ts, ts})
		}
		schema := [][]any{{"ContainerGroup_s", "string"}, {"Message", "string"}, {"TimeGenerated", "datetime"}}
		return []fakeAnswer{
			{"ContainerInstanceLog_CL | getschema", 200, table([]string{"ColumnName", "ColumnType"}, schema...)},
			{"summarize lines = count()", 200, table([]string{"ContainerGroup", "lines", "events", "first", "last"}, rows...)},
			{`"storage_forbidden"`, 200, table([]string{"ContainerGroup", "refused", "last"})},
			{"let gap_limit", 200, table([]string{"t", "identity", "gap_seconds"})},
			{"leaders_started", 200, table([]string{"leaders_started"})},
		}
	}
	target := func() VerifyTarget {
		tg := verifyTarget(nil)
		tg.Table = "ContainerInstanceLog_CL"
		tg.Route = LogRoute{Route: RouteLegacy, GroupColumn: "ContainerGroup_s"}
		tg.Columns = map[string]string{"ContainerGroup_s": "string", "Message": "string", "TimeGenerated": "datetime"}
		tg.LockGroups = []string{"bl-locks-01"}
		return tg
	}
	arm := healthyARM()
	v, ws, _ := newVerifier(t, now, legacy(true), "", arm)
	m := verdicts(v.Run(ctxT(t, time.Minute), target()))
	if a := m[AssumeRoute]; a.Verdict != Skip || !strings.Contains(a.Evidence, "log_route is legacy") {
		t.Errorf("route: %s; want SKIP saying the route is legacy", a.Line())
	}
	if a := m[AssumeLines]; a.Verdict != Pass || !strings.Contains(a.Evidence, "1 of 1 lock service groups, 3 lines in ContainerInstanceLog_CL") {
		t.Errorf("lines: %s; want PASS with the lock service's lines", a.Line())
	}
	for _, name := range []string{AssumeTable, AssumeQueries, AssumeRoles} {
		if m[name].Verdict != Pass {
			t.Errorf("%s", m[name].Line())
		}
	}
	for _, q := range ws.queries {
		if strings.Contains(q, "ContainerInstanceLog\n") || strings.Contains(q, "ContainerName") {
			t.Errorf("a query of the legacy route reads the resource-specific table or its container column: %q", q)
		}
	}
	if len(arm.reads) != 0 {
		t.Errorf("the legacy route read diagnostic settings: %v", arm.reads)
	}
	v, _, _ = newVerifier(t, now, legacy(false), "", healthyARM())
	if a := verdicts(v.Run(ctxT(t, time.Minute), target()))[AssumeLines]; a.Verdict != Fail || !strings.Contains(a.Evidence, "bl-locks-01") ||
		!strings.Contains(a.Evidence, "the legacy integration delivers no line of theirs either") {
		t.Errorf("lines without the lock service's: %s; want FAIL naming bl-locks-01 and what the legacy route means", a.Line())
	}
}

// TestOffline_PreflightRefusesAPendingDiagnosticsPreview: the suite stops
// before creating anything when the subscription lists a Container
// Instances feature about diagnostics that is not registered, naming the
// command that enables it; the legacy route needs none; a listing that
// fails leaves the verdict to the verify stage.
func TestOffline_PreflightRefusesAPendingDiagnosticsPreview(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	pending := healthyARM()
	pending.features = append(pending.features, Feature{Name: "Microsoft.ContainerInstance/ExampleDiagnosticsPreview", State: "Registering"})
	_, err := DiagnosticsPreflight(ctx, pending, "s", "")
	if err == nil || !strings.Contains(err.Error(), "cannot run, nothing was created") ||
		!strings.Contains(err.Error(), "az feature register --namespace Microsoft.ContainerInstance --name ExampleDiagnosticsPreview") ||
		!strings.Contains(err.Error(), EnvTFVars) || strings.Contains(err.Error(), "\n") {
		t.Errorf("pending preview: %v; want one line naming the command and %s", err, EnvTFVars)
	}
	if note, err := DiagnosticsPreflight(ctx, pending, "s", `{"log_route":"legacy"}`); err != nil || !strings.Contains(note, "legacy") {
		t.Errorf("legacy route: %q, %v; want no refusal", note, err)
	}
	if note, err := DiagnosticsPreflight(ctx, healthyARM(), "s", ""); err != nil || !strings.Contains(note, "none of the 1") {
		t.Errorf("nothing pending: %q, %v", note, err)
	}
	if note, err := DiagnosticsPreflight(ctx, &fakeARM{listErr: &ARMError{Status: 403, Code: "AuthorizationFailed"}}, "s", ""); err != nil || !strings.Contains(note, "verify stage checks") {
		t.Errorf("listing refused: %q, %v; want a note, no refusal", note, err)
	}
}
