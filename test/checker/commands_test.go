package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// started and exited build child events with their raw lines (the checker
// reads pid, cause and status from the line as a history holds it).
func started(sec float64, id string, term int64, pid int) Event {
	e := ev(sec, id, EventChildStarted, term, none)
	e.Raw = fmt.Sprintf(`{"t":%q,"identity":%q,"event":"child_started","term":%d,"pid":%d}`, e.T.Format(time.RFC3339Nano), id, term, pid)
	return e
}

func exited(sec float64, id string, term int64, pid int, cause string) Event {
	e := ev(sec, id, EventChildExited, term, none)
	e.Raw = fmt.Sprintf(`{"t":%q,"identity":%q,"event":"child_exited","term":%d,"pid":%d,"exit_code":0,"cause":%q}`, e.T.Format(time.RFC3339Nano), id, term, pid, cause)
	return e
}

func entry(seq int64, term int64, holder string, sec float64) LedgerEntry {
	return LedgerEntry{Seq: seq, Term: term, Holder: holder, At: at(sec)}
}

func checkCommands(t *testing.T, run CommandRun, exc ...Exception) CommandResult {
	t.Helper()
	res, err := CheckCommands(run, CommandParams{Params: testParams(), Exceptions: exc})
	if err != nil {
		t.Fatalf("CheckCommands: %v", err)
	}
	return res
}

func TestCheckCommands(t *testing.T) {
	// a runs term 10 (pid 100) from 1 s; b runs term 11 (pid 200) after it.
	tests := []struct {
		name       string
		events     []Event
		ledger     []LedgerEntry
		faults     []Fault
		activity   []Activity
		end        float64 // run end; 0: the last event
		exceptions []Exception
		want       []string // "INV:fragment" as in wantViolations
		expected   int      // excused overlaps
	}{
		{
			name:   "clean hand-over after an exit on its own",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "exited")), one(started(6, "b", 11, 200))),
			ledger: []LedgerEntry{entry(1, 10, "a", 2), entry(2, 10, "a", 4), entry(3, 11, "b", 7)},
			end:    10,
		},
		{
			name:   "a command still running when the next starts",
			events: hist(one(started(1, "a", 10, 100)), one(exited(7, "a", 10, 100, "leadership_ended")), one(started(6, "b", 11, 200))),
			want:   []string{"S1-commands:two commands ran at once for 1s"},
		},
		{
			name:   "an unterminated lifetime is open until the run ends",
			events: hist(one(started(1, "a", 10, 100)), one(started(10, "b", 11, 200))),
			end:    20,
			want:   []string{"S1-commands:[ended by run end]"},
		},
		{
			name:   "an unterminated lifetime ends when its supervisor is SIGKILLed",
			events: hist(one(started(1, "a", 10, 100)), one(started(10, "b", 11, 200))),
			faults: []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}},
			end:    20,
		},
		{
			name:   "a crash before the command started does not end it",
			events: hist(one(started(6, "a", 10, 100)), one(started(10, "b", 11, 200))),
			faults: []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}},
			end:    20,
			want:   []string{"S1-commands"},
		},
		{
			name:   "activity after the reaped exit extends the lifetime and is itself reported",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "leadership_ended")), one(started(6, "b", 11, 200))),
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(6.5), What: "alive"}, {Holder: "a", Term: 10, PID: 101, At: at(6.6), What: "alive"},
				{Holder: "a", Term: 10, PID: 101, At: at(4), What: "alive"}, {Holder: "b", Term: 11, PID: 201, At: at(7), What: "alive"}},
			end:  10,
			want: []string{`S1-commands:reported 2 time(s) after: first "alive" by pid 101 at +6.500s`, "S1-commands:ended by activity"},
		},
		{
			name:     "activity of a command that outlived its SIGKILLed supervisor",
			events:   hist(one(started(1, "a", 10, 100)), one(started(20, "b", 11, 200))),
			faults:   []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(21), What: "alive"}},
			end:      25,
			want:     []string{"S1-commands:[crash], but its process group reported 1 time(s) after", "S1-commands:two commands"},
		},
		{
			// The harness stamps the crash once the supervisor is reaped,
			// and the guard's kill of the group lands a moment later.
			name:   "a grandchild's report 1 ms after its supervisor's SIGKILL is the guard's kill in progress",
			events: hist(one(started(1, "a", 10, 100)), one(started(20, "b", 11, 200))),
			faults: []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(4.95), What: "alive"},
				{Holder: "a", Term: 10, PID: 101, At: at(5.001), What: "alive"}},
			end: 25,
		},
		{
			name:     "a report after the guard's kill window: the command outlived its supervisor",
			events:   hist(one(started(1, "a", 10, 100)), one(started(20, "b", 11, 200))),
			faults:   []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(5.001), What: "alive"}, {Holder: "a", Term: 10, PID: 101, At: at(7), What: "alive"}},
			end:      25,
			want:     []string{`S1-commands:[crash], but its process group reported 1 time(s) after: first "alive" by pid 101 at +7.000s`},
		},
		{
			name:     "activity after the run end of a lifetime still open is no violation",
			events:   hist(one(started(1, "a", 10, 100))),
			activity: []Activity{{Holder: "a", Term: 10, PID: 100, At: at(12), What: "append ok seq 9"}},
			end:      10,
		},
		{
			name:   "supervisor alone paused, no exception named: a violation",
			events: hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			faults: []Fault{{Kind: FaultPause, Target: "a", Start: at(3), End: at(25)}},
			end:    30,
			want:   []string{"S1-commands:two commands ran at once"},
		},
		{
			name:       "supervisor alone paused, exception named: expected, S2 holds",
			events:     hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			ledger:     []LedgerEntry{entry(1, 10, "a", 2), entry(2, 10, "a", 17), entry(3, 11, "b", 18.5)},
			faults:     []Fault{{Kind: FaultPause, Target: "a", Start: at(3), End: at(25)}},
			end:        30,
			exceptions: []Exception{ExceptSupervisorAlonePaused},
			expected:   1,
		},
		{
			name:     "supervisor frozen alone, its command killed by the guard: its own reports end before the next start",
			events:   hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			faults:   []Fault{{Kind: FaultSupervisorFreeze, Target: "a", Start: at(3), End: at(25)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(3.5), What: "alive"}, {Holder: "a", Term: 10, PID: 101, At: at(12.9), What: "alive"}},
			end:      30,
		},
		{
			name:     "supervisor frozen alone, its command reporting on after the next start: S1 from the command's own reports",
			events:   hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			faults:   []Fault{{Kind: FaultSupervisorFreeze, Target: "a", Start: at(3), End: at(25)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(3.5), What: "alive"}, {Holder: "a", Term: 10, PID: 101, At: at(20), What: "alive"}},
			end:      30,
			want:     []string{"S1-commands:two commands ran at once"},
		},
		{
			name:     "supervisor stopped by SIGTSTP, its command reporting on after the next start: a violation",
			events:   hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			faults:   []Fault{{Kind: FaultJobStop, Target: "a", Start: at(3), End: at(25)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(19), What: "alive"}},
			end:      30,
			want:     []string{"S1-commands:two commands ran at once"},
		},
		{
			name:       "the exception never excuses the ledger: an orphan's write after the fence",
			events:     hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.1, "a", 10, 100, "leadership_ended"))),
			ledger:     []LedgerEntry{entry(1, 10, "a", 2), entry(2, 11, "b", 18.5), entry(3, 10, "a", 19)},
			faults:     []Fault{{Kind: FaultPause, Target: "a", Start: at(3), End: at(25)}},
			end:        30,
			exceptions: []Exception{ExceptSupervisorAlonePaused},
			expected:   1,
			want:       []string{"S2-commands:term decreased from 11 to 10"},
		},
		{
			name:       "the exception does not cover an overlap with no pause behind it",
			events:     hist(one(started(1, "a", 10, 100)), one(exited(7, "a", 10, 100, "leadership_ended")), one(started(6, "b", 11, 200))),
			exceptions: []Exception{ExceptSupervisorAlonePaused},
			want:       []string{"S1-commands"},
		},
		{
			name:       "operator break: the old command stopped within the allowance is expected",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 11, 200)), one(exited(10, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultBreak, Start: at(5)}},
			end:        12,
			exceptions: []Exception{ExceptOperatorBreak},
			expected:   1,
		},
		{
			name:       "operator break: an old command still running past the allowance is a violation",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 11, 200)), one(exited(12.5, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultBreak, Start: at(5)}},
			end:        13,
			exceptions: []Exception{ExceptOperatorBreak},
			want:       []string{"S1-commands:two commands ran at once for 7s"}, // allowance 2+2+1+1+1 = 7 s after the break
		},
		{
			// Seen in make chaos (run-mode soak, seed 20261122): three
			// deletions of the lock's container were reported as S1-commands
			// though the holder, like after a break, hears at its next renew.
			name:       "the lock's container deleted: the old command stopped within the allowance is expected",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(10, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteContainer, Start: at(5)}},
			end:        12,
			exceptions: []Exception{ExceptOperatorBreak},
			expected:   1,
		},
		{
			name:       "the lock blob deleted: the old command stopped within the allowance is expected",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(10, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteBlob, Start: at(5)}},
			end:        12,
			exceptions: []Exception{ExceptOperatorBreak},
			expected:   1,
		},
		{
			name:       "the lock's container deleted: an old command still running past the allowance is a violation",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(12.5, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteContainer, Start: at(5)}},
			end:        13,
			exceptions: []Exception{ExceptOperatorBreak},
			want:       []string{"S1-commands:two commands ran at once for 7s"},
		},
		{
			// make chaos, run soak (seed 20261124): the lock's container
			// deleted, the holder's supervisor paused 0.66 s later, before its
			// next renew. Frozen, it cannot hear of the loss; its guard stops
			// the command at the leadership's deadline + kill-grace.
			name:       "the holder's supervisor frozen after a forced loss: its guard's deadline is the allowance",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(16, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteContainer, Start: at(5)}, {Kind: FaultPause, Target: "a", Start: at(5.66), End: at(30)}},
			end:        31,
			exceptions: []Exception{ExceptOperatorBreak},
			expected:   1,
		},
		{
			// The soak's step after a forced loss may cut the holder's
			// supervisor off from storage before its next renew: it hears
			// nothing definite and steps down at its renew deadline, and its
			// guard stops the command kill-grace later.
			name:       "the holder's supervisor cut off after a forced loss: its renew deadline is the allowance",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(16, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteContainer, Start: at(5)}, {Kind: FaultPartition, Target: "a", Start: at(5.66), End: at(30)}},
			end:        31,
			exceptions: []Exception{ExceptOperatorBreak},
			expected:   1,
		},
		{
			name:       "the holder's supervisor frozen after a forced loss: a command outliving the guard's deadline is a violation",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 1000, 200)), one(exited(19, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultDeleteContainer, Start: at(5)}, {Kind: FaultPause, Target: "a", Start: at(5.66), End: at(30)}},
			end:        31,
			exceptions: []Exception{ExceptOperatorBreak},
			want:       []string{"S1-commands:two commands ran at once for 13.5s"}, // allowance 10+1+1+1 = 13 s after the loss
		},
		{
			name:       "operator break not named: a violation",
			events:     hist(one(started(1, "a", 10, 100)), one(started(5.5, "b", 11, 200)), one(exited(10, "a", 10, 100, "leadership_ended"))),
			faults:     []Fault{{Kind: FaultBreak, Start: at(5)}},
			end:        12,
			exceptions: []Exception{ExceptSupervisorAlonePaused},
			want:       []string{"S1-commands"},
		},
		{
			name:   "frozen with its supervisor and killed at resume: no overlap",
			events: hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.05, "a", 10, 100, "leadership_ended"))),
			faults: []Fault{{Kind: FaultFreeze, Target: "a", Start: at(3), End: at(25)}},
			end:    30,
		},
		{
			name:   "frozen with its supervisor and still running 2 s after resume",
			events: hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(27, "a", 10, 100, "leadership_ended"))),
			faults: []Fault{{Kind: FaultFreeze, Target: "a", Start: at(3), End: at(25)}},
			end:    30,
			want:   []string{"freeze:still ran 2s after"},
		},
		{
			name:     "frozen, reaped in time, but reports activity late",
			events:   hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(25.05, "a", 10, 100, "leadership_ended"))),
			faults:   []Fault{{Kind: FaultFreeze, Target: "a", Start: at(3), End: at(25)}},
			activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(26.5), What: "alive"}},
			end:      30,
			want:     []string{"freeze:still ran 1.5s after"},
		},
		{
			name:   "frozen and never reported dead",
			events: hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200))),
			faults: []Fault{{Kind: FaultFreeze, Target: "a", Start: at(3), End: at(25)}},
			end:    30,
			want:   []string{"freeze:never reported dead"},
		},
		{
			name:   "a term that goes backwards, and one started twice",
			events: hist(one(started(1, "a", 10, 100)), one(exited(2, "a", 10, 100, "shutdown")), one(started(3, "b", 9, 200)), one(exited(4, "b", 9, 200, "shutdown")), one(started(5, "c", 10, 300))),
			end:    6,
			want:   []string{"S2-commands:must strictly increase", "S2-commands:term 10 started two commands"},
		},
		{
			name:   "a ledger entry by a holder whose command never ran that term",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "shutdown"))),
			ledger: []LedgerEntry{entry(1, 10, "b", 2)},
			want:   []string{"S2-commands:written by \"b\""},
		},
		{
			name:   "a ledger entry stamped after its command was reaped",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "shutdown"))),
			ledger: []LedgerEntry{entry(1, 10, "a", 2), entry(2, 10, "a", 6)},
			end:    8,
			want:   []string{"S2-commands:after its term's belief ended"},
		},
		{
			name:   "slow hand-over after an exit on its own",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "exited")), one(started(8, "b", 11, 200))),
			want:   []string{"L1-commands:started 3s after"},
		},
		{
			name:   "a command stopped by the supervisor demands no fast hand-over",
			events: hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "leadership_ended")), one(started(20, "b", 11, 200))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := CommandRun{Run: Run{Events: tt.events, Ledger: tt.ledger, Faults: tt.faults, Start: t0}, Activity: tt.activity}
			if tt.end > 0 {
				run.End = at(tt.end)
			}
			res := checkCommands(t, run, tt.exceptions...)
			wantViolations(t, res.Verdict, tt.want...)
			if len(res.Expected) != tt.expected {
				t.Errorf("%d expected overlap(s), want %d: %v", len(res.Expected), tt.expected, res.Expected)
			}
			for _, v := range res.Expected {
				if v.Invariant != InvCmdS1 || !strings.Contains(v.Message, string(tt.exceptions[0])) {
					t.Errorf("expected overlap does not name its exception: %v", v)
				}
			}
		})
	}
}

func TestCheckCommands_Failovers(t *testing.T) {
	events := hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "exited")), one(started(5.8, "b", 11, 200)),
		one(exited(9, "b", 11, 200, "exited")))
	res := checkCommands(t, CommandRun{Run: Run{Events: events, End: at(9.5)}})
	if !res.OK() {
		t.Fatal(res.Err())
	}
	if len(res.Failovers) != 2 {
		t.Fatalf("%d failovers, want 2: %+v", len(res.Failovers), res.Failovers)
	}
	if fo := res.Failovers[0]; fo.Duration != 800*time.Millisecond || fo.NewIdentity != "b" || fo.Inconclusive != "" || fo.Bound != 2100*time.Millisecond {
		t.Errorf("first failover %+v: want 800ms to b, bound 2.1s", fo)
	}
	if fo := res.Failovers[1]; fo.Inconclusive == "" || !fo.To.IsZero() {
		t.Errorf("second failover %+v: the run ended 0.5 s later, want inconclusive", fo)
	}
	// Counted from the reaped exit even when later activity extends the
	// lifetime (that is S1's violation, not a slower hand-over).
	late := checkCommands(t, CommandRun{Run: Run{Events: events, End: at(9.5)}, Activity: []Activity{{Holder: "a", Term: 10, PID: 101, At: at(7), What: "alive"}}})
	if fo := late.Failovers[0]; fo.Duration != 800*time.Millisecond || fo.Inconclusive != "" {
		t.Errorf("failover with late activity %+v: want 800ms from the reaped exit", fo)
	}
	if len(res.Lifetimes) != 2 || res.Lifetimes[0].EndedBy != EndExited || res.Lifetimes[0].PID != 100 || res.Lifetimes[0].Cause != "exited" {
		t.Errorf("lifetimes %+v", res.Lifetimes)
	}
}

func TestCheckCommands_RejectsBadParams(t *testing.T) {
	if _, err := CheckCommands(CommandRun{}, CommandParams{Params: testParams(), KillAllowance: -time.Second}); err == nil || !strings.Contains(err.Error(), "KillAllowance") {
		t.Fatalf("negative KillAllowance: err %v, want one naming KillAllowance", err)
	}
	if _, err := CheckCommands(CommandRun{}, CommandParams{}); err == nil {
		t.Fatal("zero Params accepted")
	}
}
