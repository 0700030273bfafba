package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// stalledVerdict is a freeze-rule miss the measured stall explains.
func stalledVerdict(stall time.Duration) checker.Verdict {
	return checker.Verdict{Stalled: []checker.Violation{{Invariant: checker.InvCmdFreeze, Message: "command 1 of w1 still ran 1.066s after (allowed 1s)", Miss: 66 * time.Millisecond, Stall: stall}}}
}

// An inconclusive run is run again, each attempt's clusters stopped before
// the next, with its own report name, and every retry logged with its
// stall; the first conclusive pass ends it.
func TestRetryInconclusive_RunsAgainUntilJudged(t *testing.T) {
	log := filepath.Join(t.TempDir(), "retries.log")
	t.Setenv(EnvRetryLog, log)
	var names []string
	stopped := 0
	retryInconclusive(t, func(t *testing.T) {
		names = append(names, reportName(t))
		stopAtAttemptEnd(t, func() { stopped++ })
		if len(names) < 3 {
			judged(t, "verdict", stalledVerdict(200*time.Millisecond))
			return
		}
		judged(t, "verdict", checker.Verdict{})
	})
	if len(names) != 3 || stopped != 3 {
		t.Fatalf("%d attempts, %d stopped; want 3 and 3", len(names), stopped)
	}
	if !strings.HasSuffix(names[1], "-attempt2") || !strings.HasSuffix(names[2], "-attempt3") || strings.Contains(names[0], "attempt") {
		t.Errorf("report names %v: want the first plain, then -attempt2, -attempt3", names)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], t.Name()+": attempt 1 of 3 inconclusive, measured stall 200ms: freeze: command 1 of w1 still ran") ||
		!strings.Contains(lines[1], "attempt 2 of 3") {
		t.Errorf("retry log:\n%s\nwant two lines naming the test, the attempt and the stall", b)
	}
}

// The retry policy's failures, run in a child process (a test that must
// fail cannot fail this one): inconclusive three times fails; a failed
// verdict is never retried; inconclusive outside a retry fails at once; a
// wait that ran out on a machine that did not stall fails at once.
func TestRetryInconclusive_FailsWhenItStaysInconclusiveAndNeverRetriesAFailure(t *testing.T) {
	if mode := os.Getenv("BLOBLEADER_RETRY_HELPER"); mode != "" {
		retryHelper(t, mode)
		return
	}
	for _, tc := range []struct{ mode, want string }{
		{"always", "inconclusive 3 times in a row, the last with a measured stall of 200ms"},
		{"fail", "attempts: 1"},
		{"unwrapped", "checker: inconclusive"},
		{"waitfail", "the ledger took no entries within 20ms"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestRetryInconclusive_FailsWhenItStaysInconclusiveAndNeverRetriesAFailure$", "-test.v")
			cmd.Env = append(os.Environ(), "BLOBLEADER_RETRY_HELPER="+tc.mode, EnvRetryLog+"=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), tc.want) {
				t.Fatalf("mode %s: exit %v, want a failure mentioning %q:\n%s", tc.mode, err, tc.want, out)
			}
		})
	}
}

func retryHelper(t *testing.T, mode string) {
	n := 0
	defer func() { t.Logf("attempts: %d", n) }()
	if mode == "unwrapped" {
		judged(t, "verdict", stalledVerdict(200*time.Millisecond))
		return
	}
	retryInconclusive(t, func(t *testing.T) {
		n++
		if mode == "keep" {
			attempt := n
			ifFailed(t, func(dir string, ok bool) {
				if ok && os.MkdirAll(dir, 0o755) == nil {
					_ = os.WriteFile(filepath.Join(dir, "attempt"), []byte(fmt.Sprint(attempt)), 0o644)
				}
			})
			if attempt == 3 {
				judged(t, "verdict", checker.Verdict{Violations: []checker.Violation{{Invariant: checker.InvS1, Message: "two leaders"}}})
				return
			}
		}
		if mode == "waitfail" {
			wt := waitOn(struct{ cluster.Cluster }{}, 20*time.Millisecond) // no probes: no stall
			for !wt.over() {
				time.Sleep(5 * time.Millisecond)
			}
			wt.fatal(t, "the ledger took no entries within %v", wt.timeout)
		}
		if mode == "fail" {
			judged(t, "verdict", checker.Verdict{Violations: []checker.Violation{{Invariant: checker.InvS1, Message: "two leaders"}}})
			return
		}
		judged(t, "verdict", stalledVerdict(200*time.Millisecond))
	})
}

// A scenario inconclusive twice and failed on its third run keeps each
// attempt's evidence under that attempt's name (every attempt's cleanup
// runs at the test's end, when no attempt is current any more): the
// failure's own files are not overwritten by the first attempt's.
func TestRetryInconclusive_EachAttemptOfAFailedScenarioKeepsItsOwnEvidence(t *testing.T) {
	keep := t.TempDir()
	name := "TestRetryInconclusive_FailsWhenItStaysInconclusiveAndNeverRetriesAFailure"
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), "BLOBLEADER_RETRY_HELPER=keep", EnvRetryLog+"=", EnvOut+"=", EnvKeepFailed+"="+keep)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "attempts: 3") {
		t.Fatalf("exit %v; want the helper to fail on its third attempt:\n%s", err, out)
	}
	for i, dir := range []string{name, name + "-attempt2", name + "-attempt3"} {
		want := i + 1
		b, err := os.ReadFile(filepath.Join(keep, dir, "attempt"))
		if err != nil || string(b) != fmt.Sprint(want) {
			entries, _ := filepath.Glob(filepath.Join(keep, "*", "attempt"))
			t.Errorf("%s/attempt = %q, %v; want %d (kept: %v)", dir, b, err, want, entries)
		}
	}
}
