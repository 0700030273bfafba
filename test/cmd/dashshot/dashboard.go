package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// The parts of a Grafana dashboard this drawing needs.
type dashboardJSON struct {
	Title  string      `json:"title"`
	Panels []panelJSON `json:"panels"`
}

type panelJSON struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit     string `json:"unit"`
			Mappings []struct {
				Options map[string]struct {
					Text  string `json:"text"`
					Color string `json:"color"`
				} `json:"options"`
			} `json:"mappings"`
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type point struct {
	t time.Time
	v float64
}

type series struct {
	labels map[string]string
	legend string
	points []point
}

func loadDashboard(path string) (*dashboardJSON, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboardJSON
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(d.Panels) == 0 {
		return nil, fmt.Errorf("%s has no panels", path)
	}
	return &d, nil
}

// Grafana's variables as the picture fills them: every job, a 10 s rate
// window (five 2 s scrapes).
var variables = strings.NewReplacer(`job=~"$job"`, `job=~".+"`, `job=~"$locks_job"`, `job=~".+"`, "$__rate_interval", "10s")

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// queryPanels runs every panel's queries over [from, to], one point every 2 s.
func queryPanels(ctx context.Context, base string, d *dashboardJSON, from, to time.Time) ([][]series, error) {
	out := make([][]series, len(d.Panels))
	for i, p := range d.Panels {
		for _, t := range p.Targets {
			ss, err := promQuery(ctx, base, variables.Replace(t.Expr), from, to, 2*time.Second)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", p.Title, err)
			}
			for j := range ss {
				labels := ss[j].labels
				ss[j].legend = legendLabel.ReplaceAllStringFunc(t.LegendFormat, func(m string) string {
					return labels[legendLabel.FindStringSubmatch(m)[1]]
				})
			}
			out[i] = append(out[i], ss...)
		}
	}
	return out, nil
}
