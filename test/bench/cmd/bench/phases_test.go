package main

import (
	"context"
	"strings"
	"testing"
)

// Every phase the bench accepts measures something: a phase that plans no
// job and no step would run nothing and still report "0 errors".
func TestPhases_EveryPhasePlansSomething(t *testing.T) {
	for _, p := range phaseOrder {
		cfg := config{runs: 2, parallel: 1, seed: 1, phases: map[string]bool{p: true}}
		b := newInvocation(context.Background(), cfg)
		b.planJobs()
		if len(b.jobs) == 0 && len(b.steps) == 0 {
			t.Errorf("phase %q plans no job and no step: it would measure nothing", p)
		}
	}
}

func TestPhases_UnknownPhaseIsRefused(t *testing.T) {
	if _, err := checkPhases(map[string]bool{"lock": true, "failover": true}); err == nil || !strings.Contains(err.Error(), `"lock"`) {
		t.Fatalf("checkPhases(lock, failover) = %v, want an error naming \"lock\"", err)
	}
	if _, err := checkPhases(map[string]bool{"locks": true}); err != nil {
		t.Fatalf("checkPhases(locks) = %v", err)
	}
}
