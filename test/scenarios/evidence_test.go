package scenarios

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// A worker whose history file is gone is not skipped: the run fails with an
// evidence violation naming it (issue 10: a checker that saw no evidence has
// not passed).
func TestChecker_FailsAStartedWorkerWithoutHistory(t *testing.T) {
	t.Parallel()
	c := Local(t, 2)
	p := c.Params()
	leader := c.WaitLeader(t, takeover(p))
	h, err := c.History(ctxFor(t, time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A follower's: nothing else in the run is wrong, so only the missing
	// evidence can fail it.
	lost := h.Workers[0]
	if lost.Identity == leader.Identity() {
		lost = h.Workers[1]
	}
	if err := os.Remove(lost.History); err != nil {
		t.Fatal(err)
	}
	_, res := Judge(t, c, reportName(t))
	var found bool
	for _, v := range res.Violations {
		found = found || (v.Invariant == checker.InvEvidence && strings.Contains(v.Message, "worker "+lost.Identity+" was started but left no history"))
	}
	if !found || res.Verdict() != checker.VerdictFail {
		t.Fatalf("the history of %s was removed, yet verdict %s, violations %v", lost.Identity, res.Verdict(), res.Violations)
	}
	t.Logf("caught as expected: %v", res.Err())
}
