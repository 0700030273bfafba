//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The alerts stage of the suite (docs/testing-on-azure.md, "The alerts
// stage"): each alert scenario does something to the deployment, then every
// rule's query, exactly as deployed, runs over the scenario's time through
// the query API: the rules the scenario must fire return rows, every other
// rule none. At the end Azure Monitor itself must have fired each rule a
// scenario fires (the Alerts Management API), and never two_leaders.

// AlertParams are the deployment's thresholds the scenarios need
// (terraform output alert_thresholds).
type AlertParams struct {
	GapSeconds        float64 `json:"no_leader_gap_seconds"`
	FlappingHandovers int     `json:"flapping_handovers"`
}

// RuleNeverFires is the rule that must not fire over the whole run.
const RuleNeverFires = "two_leaders"

// WindowOf renders a time span as the query API's timespan (an ISO 8601
// interval).
func WindowOf(from, to time.Time) string {
	return from.UTC().Format(time.RFC3339) + "/" + to.UTC().Format(time.RFC3339)
}

// CheckRules runs every rule's query over [from, to] and compares: the rules
// in fires must return rows, every other rule none. It returns one line per
// rule and an error naming each rule that did otherwise.
func CheckRules(ctx context.Context, logs LogQuerier, workspace string, rules map[string]AlertQuery, from, to time.Time, fires []string) ([]string, error) {
	for _, f := range fires {
		if _, ok := rules[f]; !ok {
			return nil, fmt.Errorf("the deployment has no rule %s to fire", f)
		}
	}
	var lines, wrong []string
	for _, name := range sortedKeys(rules) {
		res, err := logs.Query(ctx, workspace, rules[name].Query, WindowOf(from, to))
		if err != nil {
			wrong = append(wrong, fmt.Sprintf("%s: the query was refused: %v", name, oneLine(err.Error())))
			continue
		}
		want := slices.Contains(fires, name)
		got := len(res.Rows) > 0
		state := "quiet"
		if got {
			state = fmt.Sprintf("fires (%d rows)", len(res.Rows))
		}
		lines = append(lines, name+" "+state)
		switch {
		case want && !got:
			wrong = append(wrong, name+" stayed quiet; it must fire")
		case !want && got:
			wrong = append(wrong, fmt.Sprintf("%s fired (%d rows: %s); it must stay quiet", name, len(res.Rows), clip(fmt.Sprint(res.Rows[0]), 200)))
		}
	}
	if len(wrong) > 0 {
		return lines, fmt.Errorf("over %s: %s", WindowOf(from, to), strings.Join(wrong, "; "))
	}
	return lines, nil
}

// WaitIngested waits until the table holds a worker line the workers
// stamped at or after `after` (Log Analytics ingests minutes late), so a
// scenario's lines are all there before its rules are judged.
func WaitIngested(ctx context.Context, logs LogQuerier, t VerifyTarget, after time.Time, budget, poll time.Duration,
	now func() time.Time, sleep func(context.Context, time.Duration) error) (time.Duration, error) {
	q := fmt.Sprintf(`%s
| extend t = todatetime(tostring(parse_json(Message)['time']))
| summarize latest = max(t)`, t.rows(t.Groups, "worker"))
	start := now()
	for {
		res, err := logs.Query(ctx, t.Workspace, q, "PT1H")
		if err != nil {
			return now().Sub(start), err
		}
		if len(res.Rows) > 0 && len(res.Rows[0]) > 0 {
			if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(res.Rows[0][0])); err == nil && !at.Before(after) {
				return now().Sub(start), nil
			}
		}
		if waited := now().Sub(start); waited >= budget {
			return waited, fmt.Errorf("no worker line stamped after %s in %s within %v: the lines are not arriving", after.UTC().Format(time.RFC3339), t.Table, budget)
		}
		if err := sleep(ctx, poll); err != nil {
			return now().Sub(start), err
		}
	}
}

// FiredAlert is one alert instance Azure Monitor fired.
type FiredAlert struct {
	Rule      string    // the rule's ARM id, as Alerts Management names it
	Started   time.Time // essentials.startDateTime
	Condition string    // Fired or Resolved
}

// alertsAPI is the Alerts Management API version whose Alerts_GetAll takes
// alertRule and customTimeRange (azure-rest-api-specs, alertsmanagement).
const alertsAPI = "2019-05-05-preview"

// FiredAlerts lists the alerts the rule fired in the subscription within
// [from, to] (at most 30 days back).
func FiredAlerts(ctx context.Context, arm ARMReader, subscription, ruleID string, from, to time.Time) ([]FiredAlert, error) {
	q := url.Values{"alertRule": {ruleID}, "customTimeRange": {WindowOf(from, to)}}
	items, err := arm.List(ctx, "/subscriptions/"+subscription+"/providers/Microsoft.AlertsManagement/alerts", alertsAPI, q)
	if err != nil {
		return nil, err
	}
	var out []FiredAlert
	for _, raw := range items {
		var a struct {
			Properties struct {
				Essentials struct {
					AlertRule        string    `json:"alertRule"`
					StartDateTime    time.Time `json:"startDateTime"`
					MonitorCondition string    `json:"monitorCondition"`
				} `json:"essentials"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("an alert of %s is not JSON: %w", ruleID, err)
		}
		e := a.Properties.Essentials
		// Filtered again here: an answer that ignored the filter must not
		// count another rule's alert.
		if strings.EqualFold(e.AlertRule, ruleID) {
			out = append(out, FiredAlert{Rule: e.AlertRule, Started: e.StartDateTime, Condition: e.MonitorCondition})
		}
	}
	return out, nil
}

// WaitFired waits until Azure Monitor has fired every rule in want (name
// -> ARM id) at or after since, up to budget: a rule evaluates every few
// minutes over lines ingested minutes late. It returns when each fired, or
// an error naming the rules that never did.
func WaitFired(ctx context.Context, arm ARMReader, subscription string, want map[string]string, since time.Time, budget, poll time.Duration,
	now func() time.Time, sleep func(context.Context, time.Duration) error) (map[string]time.Time, error) {
	start := now()
	fired := map[string]time.Time{}
	for {
		for _, name := range sortedKeys(want) {
			if _, ok := fired[name]; ok {
				continue
			}
			as, err := FiredAlerts(ctx, arm, subscription, want[name], since, now())
			if err != nil {
				return fired, fmt.Errorf("the fired alerts of %s cannot be read: %w", name, err)
			}
			for _, a := range as {
				if !a.Started.Before(since) {
					fired[name] = a.Started
					break
				}
			}
		}
		if len(fired) == len(want) {
			return fired, nil
		}
		if now().Sub(start) >= budget {
			var missing []string
			for _, name := range sortedKeys(want) {
				if _, ok := fired[name]; !ok {
					missing = append(missing, name)
				}
			}
			return fired, fmt.Errorf("Azure Monitor fired no alert of %s within %v after its scenario (its query fired over the scenario: the rule's evaluation, its action group or the Alerts Management listing is what fails)",
				strings.Join(missing, ", "), budget)
		}
		if err := sleep(ctx, poll); err != nil {
			return fired, err
		}
	}
}
