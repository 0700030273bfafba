package bench

import (
	"strings"
	"testing"
)

func TestRenderRunFaults_OneRowPerFaultWithItsOverlap(t *testing.T) {
	if got := renderSection(t, "runfaults.md.tmpl", Results{}); got != "" {
		t.Fatalf("no trials should render nothing, got %q", got)
	}
	got := renderSection(t, "runfaults.md.tmpl", Results{RunFaults: []FaultTrial{
		{Fault: RunFaults[1].Name, FaultDead: 0.02},
		{Fault: RunFaults[1].Name, FaultDead: 0.04, OverlapS: 0.5},
		{Fault: RunFaults[2].Name, FaultDead: 10.1},
	}})
	for _, want := range []string{"| " + RunFaults[1].Name + " | 2 | ", "| 0.500 | 1 |", "| " + RunFaults[2].Name + " | 1 | 10.100 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("rows lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, RunFaults[0].Name) {
		t.Errorf("a fault without trials got a row:\n%s", got)
	}
}
