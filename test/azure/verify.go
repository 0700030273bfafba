//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
)

// The assumptions a real deployment rests on that no offline test can
// show (docs/testing-on-azure.md, "make verify-azure"). Each is checked
// against the deployment and reported PASS or FAIL with its evidence; a
// failed one is one line naming what is false, never a timeout blamed on
// something else.
const (
	AssumeProviders = "resource providers registered"
	AssumeRoute     = "the groups' log route exists (ACI diagnostic settings)"
	AssumeLines     = "worker and lock service lines arrive in the log table"
	AssumeTable     = "log table and the columns the alerts query exist"
	AssumeQueries   = "each alert query runs"
	AssumeRoles     = "role assignments have propagated"
)

// Verdicts of one assumption.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Skip = "SKIP"
)

// Assumption is one checked assumption.
type Assumption struct {
	Name     string        `json:"name"`
	Verdict  string        `json:"verdict"`
	Evidence string        `json:"evidence"`
	Took     time.Duration `json:"took_ns"`
}

// Line is the assumption as one report line.
func (a Assumption) Line() string {
	return fmt.Sprintf("%s  %s: %s", a.Verdict, a.Name, a.Evidence)
}

// LogQuerier runs a log query (LogsClient; a fake in tests).
type LogQuerier interface {
	Query(ctx context.Context, workspace, query, timespan string) (*LogTable, error)
}

// ProviderGetter reads a resource provider's registration (armresources).
type ProviderGetter interface {
	Get(ctx context.Context, namespace string, opts *armresources.ProvidersClientGetOptions) (armresources.ProvidersClientGetResponse, error)
}

// ResourceGetter reads any ARM resource by id (armresources.Client).
type ResourceGetter interface {
	GetByID(ctx context.Context, id, apiVersion string, opts *armresources.ClientGetByIDOptions) (armresources.ClientGetByIDResponse, error)
}

// AlertQuery is one rule's query as deployed, and its window.
type AlertQuery struct {
	Query  string `json:"query"`
	Window string `json:"window"`
}

// VerifyTarget is the deployment to verify (from `terraform output` and
// infra/).
type VerifyTarget struct {
	Subscription    string                // the deployment's subscription
	Workspace       string                // workspace GUID
	WorkspaceID     string                // workspace ARM id (where the diagnostic settings send)
	Table           string                // the table the alerts read (ContainerInstanceLog, or the legacy ContainerInstanceLog_CL)
	Route           LogRoute              // how the groups' lines reach Table
	Groups          []string              // worker container groups
	LockGroups      []string              // lock service container groups (none unless lock_service.enabled)
	GroupIDs        []string              // ARM ids of all of them
	Providers       []string              // namespaces infra/terraform.tf registers
	Columns         map[string]string     // documented columns (alerts/tables.json) the alerts name, with their types
	Alerts          map[string]AlertQuery // rule name -> query and window
	RoleAssignments map[string]string     // what it grants -> ARM id
	// DataProbe reads the lease container with the caller's own data role
	// (nil: not checked).
	DataProbe func(ctx context.Context) error
	LogWait   time.Duration // how long to wait for the first worker lines (default 15m)
	LogPoll   time.Duration // between looks (default 30s)
}

// Verifier checks a VerifyTarget with the given clients.
type Verifier struct {
	Logs      LogQuerier
	Providers ProviderGetter
	Resources ResourceGetter
	ARM       ARMReader // features, diagnostic settings
	Now       func() time.Time
	Sleep     func(context.Context, time.Duration) error
}

// Run checks every assumption in order and returns them all, whatever
// failed.
func (v *Verifier) Run(ctx context.Context, t VerifyTarget) []Assumption {
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.Sleep == nil {
		v.Sleep = sleepCtx
	}
	steps := []struct {
		name string
		f    func(context.Context, VerifyTarget) (string, error)
	}{
		{AssumeProviders, v.providers},
		{AssumeRoute, v.route},
		{AssumeLines, v.lines},
		{AssumeTable, v.table},
		{AssumeQueries, v.queries},
		{AssumeRoles, v.roles},
	}
	var out []Assumption
	for _, s := range steps {
		t0 := v.Now()
		ev, err := s.f(ctx, t)
		a := Assumption{Name: s.name, Verdict: Pass, Evidence: ev, Took: v.Now().Sub(t0)}
		var skip skipError
		switch {
		case errors.As(err, &skip):
			a.Verdict, a.Evidence = Skip, skip.reason
		case err != nil:
			a.Verdict, a.Evidence = Fail, oneLine(err.Error())
		}
		out = append(out, a)
	}
	return out
}

type skipError struct{ reason string }

func (s skipError) Error() string { return s.reason }

// providers: every namespace infra/ registers is Registered.
func (v *Verifier) providers(ctx context.Context, t VerifyTarget) (string, error) {
	if len(t.Providers) == 0 {
		return "", errors.New("no resource provider to check: infra/terraform.tf lists none")
	}
	var ok, bad []string
	for _, ns := range t.Providers {
		r, err := v.Providers.Get(ctx, ns, nil)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s (read failed: %v)", ns, err))
		case r.RegistrationState == nil || *r.RegistrationState != "Registered":
			bad = append(bad, fmt.Sprintf("%s is %s", ns, deref(r.RegistrationState, "unknown")))
		default:
			ok = append(ok, ns)
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("%s; a create in them answers MissingSubscriptionRegistration: az provider register --namespace <namespace>", strings.Join(bad, "; "))
	}
	return fmt.Sprintf("%d of %d Registered: %s", len(ok), len(t.Providers), strings.Join(ok, ", ")), nil
}

// table: the table resolves and has each documented column the alerts
// name, with its documented type (getschema).
func (v *Verifier) table(ctx context.Context, t VerifyTarget) (string, error) {
	res, err := v.Logs.Query(ctx, t.Workspace, t.Table+" | getschema | project ColumnName, ColumnType", "PT1H")
	if err != nil {
		var qe *QueryError
		if errors.As(err, &qe) && qe.Has("SEM0100") {
			return "", fmt.Errorf("table %s does not exist in the workspace (SEM0100): the alert rules over it fail every evaluation; see the lines check above for the route that should fill it; %v", t.Table, err)
		}
		return "", err
	}
	got := map[string]string{}
	for _, r := range res.Rows {
		if len(r) >= 2 {
			got[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
		}
	}
	var missing []string
	for _, c := range sortedKeys(t.Columns) {
		switch typ, ok := got[c]; {
		case !ok:
			missing = append(missing, c+" (missing)")
		case !strings.EqualFold(typ, t.Columns[c]):
			missing = append(missing, fmt.Sprintf("%s (%s, documented %s)", c, typ, t.Columns[c]))
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("table %s lacks what the alerts query: %s (getschema lists %d columns)", t.Table, strings.Join(missing, ", "), len(got))
	}
	return fmt.Sprintf("%s has %d columns; the alerts' %s are there with their documented types", t.Table, len(got), strings.Join(sortedKeys(t.Columns), ", ")), nil
}

// lines: every worker group's JSON event lines, and some line of every lock
// service group, reach the table within LogWait. How long the first lines
// took is measured; a table that does not exist yet is waited for too (the
// legacy one appears with its first line); a miss says where the lines
// went instead (the legacy table) when it can tell.
func (v *Verifier) lines(ctx context.Context, t VerifyTarget) (string, error) {
	wait, poll := orDefault(t.LogWait, 15*time.Minute), orDefault(t.LogPoll, 30*time.Second)
	groups := append(append([]string{}, t.Groups...), t.LockGroups...)
	q := fmt.Sprintf(`%s
| extend event = tostring(parse_json(Message).event)
| summarize lines = count(), events = countif(isnotempty(event)), first = min(TimeGenerated), last = max(TimeGenerated) by ContainerGroup = %s`,
		t.rows(groups, "worker", "locks"), t.Route.GroupColumn)
	start := v.Now()
	for {
		res, err := v.Logs.Query(ctx, t.Workspace, q, "PT6H")
		var qe *QueryError
		switch {
		case errors.As(err, &qe) && qe.Has("SEM0100"):
			res = &LogTable{} // no table yet: no line yet
		case err != nil:
			return "", err
		}
		seen := map[string][2]float64{}
		gi, li, ei := res.Col("ContainerGroup"), res.Col("lines"), res.Col("events")
		for _, r := range res.Rows {
			if gi >= 0 && li >= 0 && ei >= 0 {
				seen[fmt.Sprint(r[gi])] = [2]float64{num(r[li]), num(r[ei])}
			}
		}
		var lacking []string
		events, lockLines := 0.0, 0.0
		for _, g := range t.Groups {
			if seen[g][1] == 0 {
				lacking = append(lacking, g)
			}
			events += seen[g][1]
		}
		for _, g := range t.LockGroups {
			if seen[g][0] == 0 {
				lacking = append(lacking, g)
			}
			lockLines += seen[g][0]
		}
		waited := v.Now().Sub(start).Round(time.Second)
		if len(lacking) == 0 {
			locks := ""
			if len(t.LockGroups) > 0 {
				locks = fmt.Sprintf(", %d of %d lock service groups, %.0f lines", len(t.LockGroups), len(t.LockGroups), lockLines)
			}
			return fmt.Sprintf("%d of %d groups, %.0f JSON event lines%s in %s; the last group's first lines found after %v of looking", len(t.Groups), len(t.Groups), events, locks, t.Table, waited), nil
		}
		if waited >= wait {
			return "", fmt.Errorf("no JSON event line of %s in %s after %v (%d of %d groups seen)%s", strings.Join(lacking, ", "), t.Table, waited, len(groups)-len(lacking), len(groups), v.legacyHint(ctx, t, lacking))
		}
		if err := v.Sleep(ctx, poll); err != nil {
			return "", fmt.Errorf("stopped looking for worker lines after %v: %w", waited, err)
		}
	}
}

// legacyHint says whether the legacy integration's table has the lines
// the resource-specific one lacks: then the diagnostic setting is what
// fails (with the fix). The legacy route has no other table to look in.
func (v *Verifier) legacyHint(ctx context.Context, t VerifyTarget, groups []string) string {
	if t.Route.Route == RouteLegacy {
		return "; the legacy integration delivers no line of theirs either: are they running (az container logs)? The workspace key in each group must be the workspace's"
	}
	q := fmt.Sprintf("ContainerInstanceLog_CL | where ContainerGroup_s in (dynamic(%s)) | count", jsonList(groups))
	res, err := v.Logs.Query(ctx, t.Workspace, q, "PT6H")
	var qe *QueryError
	switch {
	case errors.As(err, &qe) && qe.Has("SEM0100"):
		return "; ContainerInstanceLog_CL does not exist either: neither route delivered a line (are the workers running? az container logs)"
	case err != nil || len(res.Rows) == 0 || len(res.Rows[0]) == 0:
		return ""
	case num(res.Rows[0][0]) > 0:
		return fmt.Sprintf("; ContainerInstanceLog_CL has %.0f of their lines: the legacy route delivers, the diagnostic setting (category ContainerInstanceLog, Dedicated) does not: enable ACI diagnostic settings in the subscription (az feature list --namespace Microsoft.ContainerInstance) or redeploy with TF_VAR_log_route=legacy", num(res.Rows[0][0]))
	default:
		return "; ContainerInstanceLog_CL has none of their lines either"
	}
}

// queries: each rule's query, as deployed, runs over its window.
func (v *Verifier) queries(ctx context.Context, t VerifyTarget) (string, error) {
	if len(t.Alerts) == 0 {
		return "", skipError{"no alert queries in the outputs (no worker groups yet)"}
	}
	var ran, bad []string
	for _, name := range sortedKeys(t.Alerts) {
		a := t.Alerts[name]
		res, err := v.Logs.Query(ctx, t.Workspace, a.Query, a.Window)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		state := "quiet"
		if len(res.Rows) > 0 {
			state = fmt.Sprintf("would fire (%d rows)", len(res.Rows))
		}
		ran = append(ran, fmt.Sprintf("%s %s", name, state))
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("%d of %d queries refused: %s", len(bad), len(t.Alerts), strings.Join(bad, "; "))
	}
	return fmt.Sprintf("%d of %d ran: %s", len(ran), len(t.Alerts), strings.Join(ran, ", ")), nil
}

// roles: measured, not waited on. Each assignment's age (ARM's createdOn);
// the caller's own data access now; the workers' and lock replicas' storage
// 403s from their log lines (storage_forbidden, or a replica's storage_error
// with status 403), whose last one bounds how long the roles took to
// propagate.
func (v *Verifier) roles(ctx context.Context, t VerifyTarget) (string, error) {
	now := v.Now()
	var oldest time.Time
	var ev []string
	for _, label := range sortedKeys(t.RoleAssignments) {
		r, err := v.Resources.GetByID(ctx, t.RoleAssignments[label], "2022-04-01", nil)
		if err != nil {
			return "", fmt.Errorf("role assignment %q cannot be read: %v", label, err)
		}
		created, ok := createdOn(r.Properties)
		if !ok {
			return "", fmt.Errorf("role assignment %q has no createdOn", label)
		}
		if oldest.IsZero() || created.Before(oldest) {
			oldest = created
		}
	}
	if len(t.RoleAssignments) > 0 {
		ev = append(ev, fmt.Sprintf("%d assignments, the oldest created %v ago", len(t.RoleAssignments), now.Sub(oldest).Round(time.Second)))
	}
	if t.DataProbe != nil {
		if err := t.DataProbe(ctx); err != nil {
			return "", fmt.Errorf("the caller's own data access to the lease container fails %v after the oldest assignment: %v", now.Sub(oldest).Round(time.Second), err)
		}
		ev = append(ev, "the caller reads the lease container")
	}
	q := fmt.Sprintf(`%s
| extend j = parse_json(Message)
| where tostring(j.event) == "storage_forbidden" or (tostring(j.event) == "storage_error" and tolong(j.status) == 403)
| summarize refused = count(), last = max(todatetime(tostring(j['time']))) by ContainerGroup = %s`,
		t.rows(append(append([]string{}, t.Groups...), t.LockGroups...), "worker", "locks"), t.Route.GroupColumn)
	res, err := v.Logs.Query(ctx, t.Workspace, q, "PT6H")
	if err != nil {
		return "", fmt.Errorf("the workers' 403 lines cannot be read: %v", err)
	}
	gi, ri, li := res.Col("ContainerGroup"), res.Col("refused"), res.Col("last")
	var recent []string
	var last time.Time
	n := 0.0
	for _, r := range res.Rows {
		if gi < 0 || ri < 0 || li < 0 {
			break
		}
		n += num(r[ri])
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r[li]))
		if err != nil {
			continue
		}
		if at.After(last) {
			last = at
		}
		if now.Sub(at) < 5*time.Minute {
			recent = append(recent, fmt.Sprintf("%s (last %v ago)", r[gi], now.Sub(at).Round(time.Second)))
		}
	}
	if len(recent) > 0 {
		return "", fmt.Errorf("workers still refused with 403 in the last 5 minutes: %s; the oldest assignment is %v old", strings.Join(recent, ", "), now.Sub(oldest).Round(time.Second))
	}
	if n == 0 {
		ev = append(ev, "no worker logged a storage 403")
	} else if !oldest.IsZero() {
		ev = append(ev, fmt.Sprintf("workers logged %.0f storage 403s, the last %v after the oldest assignment: propagated within that", n, last.Sub(oldest).Round(time.Second)))
	}
	return strings.Join(ev, "; "), nil
}

// createdOn reads a role assignment's properties.createdOn.
func createdOn(props any) (time.Time, bool) {
	m, ok := props.(map[string]any)
	if !ok {
		return time.Time{}, false
	}
	s, ok := m["createdOn"].(string)
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	return at, err == nil
}

// WriteVerifyReport writes verify-azure.md and verify-azure.json into dir
// and returns the markdown's path.
func WriteVerifyReport(dir string, at time.Time, target VerifyTarget, as []Assumption) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# verify-azure %s\n\nworkspace %s, table %s (log route %s), groups %s\n\n", at.UTC().Format(time.RFC3339), target.Workspace, target.Table,
		target.Route.Route, strings.Join(append(append([]string{}, target.Groups...), target.LockGroups...), ", "))
	fails := 0
	for _, a := range as {
		fmt.Fprintf(&b, "- %s (%v)\n", a.Line(), a.Took.Round(time.Millisecond))
		if a.Verdict == Fail {
			fails++
		}
	}
	fmt.Fprintf(&b, "\n%d assumptions, %d failed\n", len(as), fails)
	md := filepath.Join(dir, "verify-azure.md")
	if err := os.WriteFile(md, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	j, err := json.MarshalIndent(struct {
		At          time.Time    `json:"at"`
		Assumptions []Assumption `json:"assumptions"`
	}{at.UTC(), as}, "", "  ")
	if err != nil {
		return "", err
	}
	return md, os.WriteFile(filepath.Join(dir, "verify-azure.json"), j, 0o644)
}

// AlertColumns are the columns of table (documented in alertsDir's
// tables.json) that the alert queries, as deployed, name.
func AlertColumns(alertsDir, table string, queries []string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(alertsDir, "tables.json"))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Tables map[string]struct {
			Columns map[string]string `json:"columns"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("tables.json: %w", err)
	}
	cols, ok := doc.Tables[table]
	if !ok {
		return nil, fmt.Errorf("tables.json documents no table %s", table)
	}
	if len(queries) == 0 {
		return nil, fmt.Errorf("no alert queries to read the columns from")
	}
	text := strings.Join(queries, "\n")
	out := map[string]string{}
	for c, typ := range cols.Columns {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(c) + `\b`).MatchString(text) {
			out[c] = typ
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the alert queries name no documented column of %s", table)
	}
	return out, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func deref(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	case int:
		return float64(n)
	}
	return 0
}

func jsonList(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
