//go:build azure

package azure

import (
	"fmt"
	"strings"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// RequireReleased checks the graceful stops injected since `since` (one
// scenario's part of the deployment's run): on Azure they are graceful by
// construction — the worker is asked on its control endpoint and SIGTERMs
// itself — so every one that hit the leader must be measured from that
// leader's `released` event, never from the crash bound the checker falls
// back to when none was logged; and a scenario that stopped workers
// gracefully must have stopped a leader at least once (no evidence is no
// pass).
func RequireReleased(run checker.Run, res checker.Result, since time.Time) error {
	stops := 0
	for _, f := range run.Faults {
		if f.Kind == checker.FaultGraceful && !f.Start.Before(since) {
			stops++
		}
	}
	if stops == 0 {
		return nil
	}
	var hit int
	var bad []string
	for _, fo := range res.Failovers {
		if fo.Kind != checker.FaultGraceful || fo.Injected.Before(since) {
			continue
		}
		hit++
		if fo.Basis != checker.BasisReleased {
			bad = append(bad, fmt.Sprintf("%s (term %d) stopped at %s: failover measured from %q", fo.Leader, fo.Term, fo.Injected.Format(time.RFC3339Nano), fo.Basis))
		}
	}
	switch {
	case len(bad) > 0:
		return fmt.Errorf("azure: graceful stops without a released event (the worker must step down and release on a control stop): %s", strings.Join(bad, "; "))
	case hit == 0:
		return fmt.Errorf("azure: %d graceful stop(s) since %s, none of them of the leader: no evidence of a graceful failover", stops, since.Format(time.RFC3339Nano))
	}
	return nil
}
