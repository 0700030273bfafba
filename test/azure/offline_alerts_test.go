//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The alerts stage's judging, on the query API behind a fake transport and
// the Alerts Management listing behind a fake ARM reader: each scenario's
// rules fire or stay quiet as it says, over the scenario's own time, once
// its lines are in; Azure Monitor must have fired each rule a scenario
// fires, and two_leaders never.

const ruleID = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Insights/scheduledQueryRules/alert-bl-"

func alertRules() map[string]AlertQuery {
	return map[string]AlertQuery{
		"no_leader":   {Query: "let workers = ContainerInstanceLog; let gap_limit = todouble(35); workers", Window: "PT15M"},
		"flapping":    {Query: "let workers = ContainerInstanceLog; workers | summarize leaders_started = count()", Window: "PT15M"},
		"two_leaders": {Query: "let workers = ContainerInstanceLog; let claims = workers; claims | join kind=inner", Window: "PT15M"},
	}
}

func TestOffline_AlertScenarioRulesFireOrStayQuietAsTheySay(t *testing.T) {
	gap := table([]string{"t", "identity", "gap_seconds"}, []any{"2026-11-28T10:03:00Z", "ci-bl-worker-02", 151.2})
	quiet := func(k string) fakeAnswer { return fakeAnswer{k, 200, table([]string{"x"})} }
	for _, tc := range []struct {
		name    string
		answers []fakeAnswer
		fires   []string
		wrong   []string
	}{
		{"every worker killed: no_leader fires, the others stay quiet", []fakeAnswer{{"gap_limit", 200, gap}, quiet("leaders_started"), quiet("join kind")},
			[]string{"no_leader"}, nil},
		{"no_leader stays quiet where it must fire", []fakeAnswer{quiet("gap_limit"), quiet("leaders_started"), quiet("join kind")},
			[]string{"no_leader"}, []string{"no_leader stayed quiet; it must fire"}},
		{"a quiet deployment where no_leader fires", []fakeAnswer{{"gap_limit", 200, gap}, quiet("leaders_started"), quiet("join kind")},
			nil, []string{"no_leader fired (1 rows: [2026-11-28T10:03:00Z ci-bl-worker-02 151.2]); it must stay quiet"}},
		{"a query refused", []fakeAnswer{{"gap_limit", 400, sem0100}, quiet("leaders_started"), quiet("join kind")},
			nil, []string{"no_leader: the query was refused", "SEM0100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := &fakeWorkspace{rules: tc.answers}
			logs := NewLogsClient(&azfake.TokenCredential{}, &policy.ClientOptions{Transport: ws})
			from := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
			lines, err := CheckRules(ctxT(t, time.Minute), logs, "11111111-1111-1111-1111-111111111111", alertRules(), from, from.Add(20*time.Minute), tc.fires)
			if len(tc.wrong) == 0 && err != nil {
				t.Fatalf("%v (lines %v)", err, lines)
			}
			for _, w := range tc.wrong {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
			if err != nil && !strings.Contains(err.Error(), "over 2026-11-28T10:00:00Z/2026-11-28T10:20:00Z") {
				t.Errorf("error %v does not name the scenario's time", err)
			}
		})
	}
	if _, err := CheckRules(ctxT(t, time.Minute), nil, "w", alertRules(), time.Now(), time.Now(), []string{"shards_unowned"}); err == nil {
		t.Error("a scenario that fires a rule the deployment lacks was accepted")
	}
}

// The query API gets each rule's query as deployed and the scenario's own
// interval as its timespan, not the rule's window.
func TestOffline_AlertRulesAreJudgedOverTheScenariosTime(t *testing.T) {
	ws := &funcWorkspace{f: func(string) string { return table([]string{"x"}) }}
	logs := NewLogsClient(&azfake.TokenCredential{}, &policy.ClientOptions{Transport: ws})
	from := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if _, err := CheckRules(ctxT(t, time.Minute), logs, "w", alertRules(), from, from.Add(12*time.Minute+30*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if len(ws.spans) != 3 || ws.spans[0] != "2026-11-28T10:00:00Z/2026-11-28T10:12:30Z" {
		t.Errorf("timespans %v, want the scenario's interval for each of the 3 rules", ws.spans)
	}
}

// funcWorkspace answers every query with f(query), and keeps the last query
// and every timespan asked for.
type funcWorkspace struct {
	f     func(query string) string
	last  string
	spans []string
}

func (w *funcWorkspace) Do(req *http.Request) (*http.Response, error) {
	var in struct{ Query, Timespan string }
	b, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	w.last, w.spans = in.Query, append(w.spans, in.Timespan)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(w.f(in.Query))), Request: req}, nil
}

// A scenario's rules are judged only once its last lines are in: the wait
// polls the newest worker timestamp until it passes the scenario's end, and
// names a table whose lines stop arriving.
func TestOffline_AlertScenariosWaitForTheirLines(t *testing.T) {
	end := time.Date(2026, 11, 28, 10, 20, 0, 0, time.UTC)
	polls := 0
	ws := &funcWorkspace{f: func(q string) string {
		polls++
		latest := end.Add(time.Duration(polls-3) * time.Minute) // passes the end on the 3rd look
		return table([]string{"latest"}, []any{latest.Format(time.RFC3339Nano)})
	}}
	logs := NewLogsClient(&azfake.TokenCredential{}, &policy.ClientOptions{Transport: ws})
	clock := end
	sleep := func(_ context.Context, d time.Duration) error { clock = clock.Add(d); return nil }
	waited, err := WaitIngested(ctxT(t, time.Minute), logs, verifyTarget(nil), end, 20*time.Minute, 30*time.Second, func() time.Time { return clock }, sleep)
	if err != nil || waited != time.Minute || polls != 3 {
		t.Fatalf("waited %v after %d looks (%v); want 1m0s and 3 looks", waited, polls, err)
	}
	if !strings.Contains(ws.last, "ContainerName in (dynamic([\"worker\"])) and ContainerGroup in (dynamic([\"ci-bl-worker-01\",\"ci-bl-worker-02\"]))") {
		t.Errorf("the wait read %q, not the workers' lines of the route's table", ws.last)
	}
	polls = -1000
	clock = end
	if _, err := WaitIngested(ctxT(t, time.Minute), logs, verifyTarget(nil), end, 20*time.Minute, 30*time.Second, func() time.Time { return clock }, sleep); err == nil ||
		!strings.Contains(err.Error(), "no worker line stamped after 2026-11-28T10:20:00Z in ContainerInstanceLog within 20m0s") {
		t.Errorf("lines that never arrive: %v", err)
	}
}

// Azure Monitor's own word: the rule a scenario fires must show an alert
// instance started after the stage began (another rule's alert, or an older
// one, does not count); two_leaders none since the deploy.
func TestOffline_AzureMonitorMustFireWhatTheScenariosFire(t *testing.T) {
	began := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	arm := &alertsARM{alerts: []alertInstance{
		{ruleID + "no-leader", began.Add(-3 * time.Hour)}, // the chaos stage's, before the alerts stage
		{ruleID + "unhealthy", began.Add(10 * time.Minute)},
		{ruleID + "no-leader", began.Add(27 * time.Minute)},
	}}
	clock := began.Add(20 * time.Minute)
	sleep := func(_ context.Context, d time.Duration) error { clock = clock.Add(d); return nil }
	want := map[string]string{"no_leader": ruleID + "no-leader", "flapping": ruleID + "flapping"}
	fired, err := WaitFired(ctxT(t, time.Minute), arm, "s", want, began, 30*time.Minute, time.Minute, func() time.Time { return clock }, sleep)
	if err == nil || !strings.Contains(err.Error(), "Azure Monitor fired no alert of flapping within 30m0s") || strings.Contains(err.Error(), "no_leader") {
		t.Errorf("flapping never fired: %v; want an error naming flapping only", err)
	}
	if !fired["no_leader"].Equal(began.Add(27 * time.Minute)) {
		t.Errorf("no_leader fired at %v, want the instance started after the stage began (+27m), not the chaos stage's", fired["no_leader"])
	}
	for _, q := range arm.queries {
		if q.Get("customTimeRange") == "" || !strings.HasPrefix(q.Get("alertRule"), ruleID) {
			t.Errorf("the listing %v must filter by rule and by a custom time range", q)
		}
	}
	never, err := FiredAlerts(ctxT(t, time.Minute), arm, "s", ruleID+"two-leaders", began.Add(-4*time.Hour), clock)
	if err != nil || len(never) != 0 {
		t.Errorf("two_leaders: %v, %v; want none", never, err)
	}
}

type alertInstance struct {
	rule    string
	started time.Time
}

// alertsARM answers the Alerts Management listing, ignoring its alertRule
// filter (FiredAlerts filters again) but not its time range.
type alertsARM struct {
	alerts  []alertInstance
	queries []url.Values
}

func (a *alertsARM) Get(context.Context, string, string) ([]byte, error) {
	return nil, fmt.Errorf("alerts ARM: unexpected get")
}

func (a *alertsARM) List(_ context.Context, path, apiVersion string, q url.Values) ([]json.RawMessage, error) {
	if path != "/subscriptions/s/providers/Microsoft.AlertsManagement/alerts" || apiVersion != alertsAPI {
		return nil, fmt.Errorf("alerts ARM: unexpected list %s %s", path, apiVersion)
	}
	a.queries = append(a.queries, q)
	span := strings.Split(q.Get("customTimeRange"), "/")
	from, _ := time.Parse(time.RFC3339, span[0])
	to, _ := time.Parse(time.RFC3339, span[1])
	var out []json.RawMessage
	for _, x := range a.alerts {
		if x.started.Before(from) || x.started.After(to) {
			continue
		}
		b, _ := json.Marshal(map[string]any{"properties": map[string]any{"essentials": map[string]any{
			"alertRule": strings.ToLower(x.rule), "startDateTime": x.started.Format(time.RFC3339), "monitorCondition": "Fired"}}})
		out = append(out, b)
	}
	return out, nil
}
