package checker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// Run mode's history events, the freeze fault and the command rules'
// invariants (CheckCommands).
const (
	EventChildStarted = "child_started" // {pid, term}
	EventChildExited  = "child_exited"  // {pid, term, exit_code | signal, cause}

	// FaultFreeze: the supervisor Target and its command's process group
	// SIGSTOPped together at Start, continued at End.
	FaultFreeze = "freeze"

	InvCmdS1     = "S1-commands"
	InvCmdS2     = "S2-commands"
	InvCmdFreeze = "freeze"
	InvCmdL1     = "L1-commands"
)

// How a command lifetime ended (Lifetime.EndedBy).
const (
	EndExited   = "child_exited" // reaped, as its supervisor reported
	EndFrozen   = "freeze"       // frozen with its supervisor; the rest is the freeze rule's
	EndActivity = "activity"     // the command reported activity after its end
	// EndLastReport: its supervisor was stopped alone (paused, frozen,
	// job-control stopped) and cannot say when the command died; its last
	// report after the stop began is the end.
	EndLastReport = "last report"
)

// Exception names an S1-commands overlap a scenario provokes on purpose;
// named in CommandParams.Exceptions, such an overlap is filed in
// CommandResult.Expected instead of Violations. S2-commands is never
// excused.
type Exception string

// ExceptSupervisorAlonePaused excuses an overlap whose earlier command's
// supervisor was paused alone (a pause fault on its identity) inside that
// command's lifetime and before the other command started. A supervisor
// paused alone cannot stop its command; its guard holds the leadership's
// deadline and does (docs/failover.md, "Commands"), so no scenario
// provokes this overlap any more. A supervisor built without the guard
// would run two commands at once until it resumed: the exception judges
// such a run.
const ExceptSupervisorAlonePaused Exception = "supervisor-alone-paused"

// ExceptOperatorBreak excuses an overlap whose earlier command's lifetime
// contains a forced loss (forcedLoss: an operator's break, the deletion of
// the lock blob or its container, hand-written metadata, a rollback) from
// before the other command started, when the earlier command ended within
// breakAllowanceFor of the loss; a later end is still a violation.
const ExceptOperatorBreak Exception = "operator-break"

// Activity is one thing a command reported doing, with its own clock.
type Activity struct {
	Holder string    `json:"holder"` // BLOBLEADER_IDENTITY
	Term   int64     `json:"term"`   // BLOBLEADER_TERM
	PID    int       `json:"pid"`    // the reporting process (the command or one it forked)
	At     time.Time `json:"at"`
	What   string    `json:"what"` // e.g. "append ok", "append fenced", "alive"
}

// ReadActivity reads a commands' activity log: one Activity a JSON line. A
// log that does not exist holds no activity; a line that is no Activity (one
// torn by a SIGKILL mid-write) is skipped.
func ReadActivity(path string) ([]Activity, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Activity
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a Activity
		if json.Unmarshal(sc.Bytes(), &a) == nil {
			out = append(out, a)
		}
	}
	return out, sc.Err()
}

// CommandRun is a run-mode run: the supervisors' histories, faults and
// bounds (Run, with Ledger the commands' ledger), and what the commands
// themselves reported.
type CommandRun struct {
	Run
	Activity []Activity
}

// CommandParams are the election timings plus the run-mode rules' own.
type CommandParams struct {
	Params
	// KillAllowance: how long after a freeze ends the frozen command may
	// still run (the supervisor's SIGKILL and reap); default 1 s
	// (supervise.KillTimeout).
	KillAllowance time.Duration
	// KillGrace: the supervisors' --kill-grace; default 1 s.
	KillGrace time.Duration
	// Exceptions the scenario provokes on purpose.
	Exceptions []Exception
}

// Lifetime is one command's run, as the history and activity show it.
type Lifetime struct {
	Identity string // its supervisor
	Term     int64
	PID      int
	Start    time.Time
	End      time.Time
	EndedBy  string // EndExited, EndCrash, EndFrozen, EndActivity or EndRunEnd
	Cause    string // child_exited's cause; "" without one
	Started  Event
	Exited   Event // zero if none
	// Resumed is the end of the freeze that ended the lifetime (EndFrozen),
	// zero if it was never continued.
	Resumed time.Time
}

// CommandFailover is the time from a command's own exit to the next start.
type CommandFailover struct {
	From         Lifetime  // the command that exited on its own
	To           time.Time // the next child_started; zero if none
	NewIdentity  string
	Duration     time.Duration
	Bound        time.Duration
	Inconclusive string `json:",omitzero"`
	// Stall: for a start past the bound, how long the machine stalled
	// from the exit to it (Run.Sched).
	Stall time.Duration `json:",omitzero"`
}

// CommandResult is the verdict on the commands of one run.
type CommandResult struct {
	Verdict   // S1-commands, freeze, S2-commands, L1-commands
	Lifetimes []Lifetime
	Expected  []Violation // S1-commands overlaps excused by a named exception
	Failovers []CommandFailover
}

// ChildEvent is a child_started or child_exited event with the command's
// own fields, read from the line as written.
type ChildEvent struct {
	Event
	PID      int    `json:"pid"`
	ExitCode *int   `json:"exit_code"` // child_exited: nil when a signal ended it
	Signal   string `json:"signal"`    // child_exited: the signal that ended it
	Cause    string `json:"cause"`     // child_exited: why (e.g. "exited")
}

// ChildEvents picks the child_started and child_exited events out of evs,
// in order, each with its own fields; a line that does not parse is an
// error naming its source.
func ChildEvents(evs []Event) ([]ChildEvent, error) {
	var out []ChildEvent
	for _, e := range evs {
		if e.Event != EventChildStarted && e.Event != EventChildExited {
			continue
		}
		ce, err := childOf(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ce)
	}
	return out, nil
}

// childOf reads e's own fields from its raw line (none for a synthetic
// event).
func childOf(e Event) (ChildEvent, error) {
	ce := ChildEvent{Event: e}
	if e.Raw == "" {
		return ce, nil
	}
	if err := json.Unmarshal([]byte(e.Raw), &ce); err != nil {
		return ChildEvent{Event: e}, fmt.Errorf("%s: %w", e.Source, err)
	}
	ce.Event = e
	return ce, nil
}

// CheckCommands judges the commands of a run-mode run (`blobleader run --
// COMMAND`, docs/failover.md#commands-under-blobleader-run), where the
// actors whose safety counts are the commands, not their supervisors. It
// derives every command's lifetime (lifetimes) and judges S1-commands
// (checkS1), the freeze rule (checkFreezes), S2-commands (checkTerms,
// checkLedger) and L1-commands (checkFailovers). The error is only for
// unusable parameters.
func CheckCommands(run CommandRun, p CommandParams) (CommandResult, error) {
	np, err := p.Params.normalized()
	if err != nil {
		return CommandResult{}, err
	}
	if p.KillAllowance < 0 || p.KillGrace < 0 {
		return CommandResult{}, fmt.Errorf("%w: KillAllowance and KillGrace must be >= 0", ErrParams)
	}
	if p.KillAllowance == 0 {
		p.KillAllowance = time.Second
	}
	if p.KillGrace == 0 {
		p.KillGrace = time.Second
	}
	run.Events = append([]Event(nil), run.Events...)
	SortEvents(run.Events)
	start, end := run.Bounds()
	c := &checker{run: run.Run, p: np, start: start, end: end}
	k := &commandChecker{checker: c, cp: p, act: run.Activity}
	k.lifetimes()
	k.checkS1()
	k.checkFreezes()
	k.checkTerms()
	k.checkLedger()
	k.checkFailovers()
	res := CommandResult{Lifetimes: k.lts, Expected: k.expected, Failovers: k.failovers}
	res.Stalled = c.stalled
	for _, inv := range []string{InvCmdS1, InvCmdFreeze, InvCmdS2, InvCmdL1} {
		for _, v := range c.violations {
			if v.Invariant == inv {
				res.Violations = append(res.Violations, v)
			}
		}
	}
	return res, nil
}

type commandChecker struct {
	*checker
	cp        CommandParams
	act       []Activity
	lts       []Lifetime
	expected  []Violation
	failovers []CommandFailover
}

func (k *commandChecker) excepted(e Exception) bool {
	for _, x := range k.cp.Exceptions {
		if x == e {
			return true
		}
	}
	return false
}

// lifetimes derives every command's lifetime. A command runs from its
// supervisor's child_started {pid, term} to the first of (recordedEnd):
//
//   - its child_exited (same identity and pid): the supervisor writes it
//     only once the command and every member of its process group are
//     reaped;
//   - the SIGKILL of its supervisor (a crash fault on that identity), or
//     its group's last own report within GuardKillWindow of it
//     (killLanded);
//   - the start of a freeze of that identity (FaultFreeze: supervisor and
//     group stopped together): a stopped process runs nothing, and what
//     runs after the thaw is the freeze rule's (checkFreezes);
//   - otherwise the end of the run. A lifetime with no end in the history
//     is open: its supervisor may still run it, or died in a way the run
//     did not record, and the command may outlive that. Treating it as
//     running to the end is the conservative reading.
//
// A supervisor stopped alone cannot date its command's death: then the
// command's own last report ends the lifetime (lastReportAfterStop).
// Activity of the command after its lifetime's end extends the lifetime
// and is an S1-commands violation (reportedAfterEnd).
func (k *commandChecker) lifetimes() {
	k.pairChildren()
	for i := range k.lts {
		lt := &k.lts[i]
		end, by, resumed := k.recordedEnd(*lt)
		lt.Resumed = resumed
		if by == EndExited || by == EndRunEnd {
			if last, ok := k.lastReportAfterStop(*lt); ok {
				lt.End, lt.EndedBy = last, EndLastReport
				continue
			}
		}
		if end.IsZero() {
			end = k.end
		}
		if end.Before(lt.Start) {
			end = lt.Start
		}
		if by == EndCrash {
			end = k.killLanded(*lt, end)
		}
		lt.End, lt.EndedBy = end, by
		if by != EndFrozen && by != EndRunEnd {
			// After a freeze the freeze rule judges; open at the run's
			// end, it may well still run.
			k.reportedAfterEnd(lt)
		}
	}
	sort.SliceStable(k.lts, func(a, b int) bool { return k.lts[a].Start.Before(k.lts[b].Start) })
}

// pairChildren starts a lifetime for every child_started and gives it the
// child_exited of the same identity and pid that follows.
func (k *commandChecker) pairChildren() {
	type key struct {
		id  string
		pid int
	}
	open := map[key]int{}
	for _, e := range k.run.Events {
		switch e.Event {
		case EventChildStarted:
			f, _ := childOf(e)
			k.lts = append(k.lts, Lifetime{Identity: e.Identity, Term: e.Term, PID: f.PID, Start: e.T, Started: e})
			open[key{e.Identity, f.PID}] = len(k.lts) - 1
		case EventChildExited:
			f, _ := childOf(e)
			if i, ok := open[key{e.Identity, f.PID}]; ok {
				k.lts[i].Exited, k.lts[i].Cause = e, f.Cause
				delete(open, key{e.Identity, f.PID})
			}
		}
	}
}

// recordedEnd is the earliest of the lifetime's reaped exit, its
// supervisor's crash and a freeze of both (zero and EndRunEnd with none),
// and the freeze's end when a freeze ended it.
func (k *commandChecker) recordedEnd(lt Lifetime) (end time.Time, by string, resumed time.Time) {
	by = EndRunEnd
	take := func(t time.Time, why string) {
		if end.IsZero() || t.Before(end) {
			end, by = t, why
		}
	}
	if lt.Exited.Event != "" {
		take(lt.Exited.T, EndExited)
	}
	if t, ok := killedAfter(k.run.Faults, lt.Identity, lt.Start); ok {
		take(t, EndCrash)
	}
	if f, ok := k.freezeOf(lt); ok {
		take(f.Start, EndFrozen)
		if by == EndFrozen {
			resumed = f.End
		}
	}
	return end, by, resumed
}

// lastReportAfterStop is the end of a lifetime whose supervisor was
// stopped alone inside it (stoppedAlone): a stopped supervisor writes
// child_exited only once it runs again, however early the command died
// (its guard kills the group at the leadership's deadline), so that record
// is no evidence of the end; the command's own last report after the stop
// began is, and so is a later ledger entry of its (one appended at storage
// just before the kill was never reported). This needs a command that
// reports steadily (ledgercmd --grandchild reports every 50 ms); the
// scenarios also check with /proc that it is dead before the next command
// starts. A command silent since the stop proves nothing either way: false,
// and the supervisor's record stands.
func (k *commandChecker) lastReportAfterStop(lt Lifetime) (time.Time, bool) {
	f, ok := k.stoppedAlone(lt)
	if !ok {
		return time.Time{}, false
	}
	var last time.Time
	for _, a := range k.act {
		if a.Holder == lt.Identity && a.Term == lt.Term && a.At.After(f.Start) && a.At.After(last) {
			last = a.At
		}
	}
	if last.IsZero() {
		return time.Time{}, false
	}
	for _, e := range k.run.Ledger {
		if e.Holder == lt.Identity && e.Term == lt.Term && e.At.After(last) {
			last = e.At
		}
	}
	return last, true
}

// reportedAfterEnd applies S1-commands to the lifetime's own activity:
// anything of (identity, term) reported after its end (+ ClockSkew) ran
// after the command was declared dead. One violation per lifetime, naming
// the first and the last report; the lifetime then lasts until the last.
func (k *commandChecker) reportedAfterEnd(lt *Lifetime) {
	var first, last Activity
	n := 0
	for _, a := range k.act {
		if a.Holder != lt.Identity || a.Term != lt.Term || !a.At.After(lt.End.Add(k.p.ClockSkew)) {
			continue
		}
		if n == 0 || a.At.Before(first.At) {
			first = a
		}
		if n == 0 || a.At.After(last.At) {
			last = a
		}
		n++
	}
	if n > 0 {
		k.report(InvCmdS1, placed(first.At, lt.Identity), []Event{lt.Started, lt.Exited},
			"command %d of %s (term %d) ended at %s [%s], but its process group reported %d time(s) after: first %q by pid %d at %s, last %q by pid %d at %s",
			lt.PID, lt.Identity, lt.Term, k.rel(lt.End), lt.EndedBy, n, first.What, first.PID, k.rel(first.At), last.What, last.PID, k.rel(last.At))
		lt.End, lt.EndedBy = last.At, EndActivity
	}
}

// GuardKillWindow is how long after its supervisor's SIGKILL a command's
// group may still report: the kernel's parent-death signal reaches the
// command itself as the supervisor dies, but the rest of its group dies by
// the guard's hand once the guard reads EOF on its pipe, a scheduling
// moment later, and the harness stamps the crash once the supervisor is
// reaped, which can come first. A report later than this is a command that
// outlived its supervisor: a violation — unless the CPU probe measured a
// stall since the crash at least as long as the report's lateness (the
// guard was due and the machine did not run it): then the lifetime lasts
// until that report (S1-commands judges its overlaps on it, strictly) and
// the lateness is inconclusive (stall.go).
const GuardKillWindow = time.Second

// killLanded is the end of a lifetime whose supervisor was SIGKILLed at
// crash: the group's last own report (activity or ledger entry) within
// GuardKillWindow of the crash, or later within the stall measured since,
// or the crash.
func (k *commandChecker) killLanded(lt Lifetime, crash time.Time) time.Time {
	end, limit := crash, crash.Add(GuardKillWindow)
	var late time.Time // the latest report past limit that the stall explains
	take := func(at time.Time) {
		switch {
		case !at.After(end):
		case !at.After(limit):
			end = at
		case at.Sub(limit) <= k.run.Sched.StallIn(crash, at):
			end, late = at, at
		}
	}
	for _, a := range k.act {
		if a.Holder == lt.Identity && a.Term == lt.Term {
			take(a.At)
		}
	}
	for _, e := range k.run.Ledger {
		if e.Holder == lt.Identity && e.Term == lt.Term {
			take(e.At)
		}
	}
	if !late.IsZero() {
		k.overrun(InvCmdS1, placed(limit, lt.Identity), timing{From: crash, Due: limit, Got: late}, []Event{lt.Started},
			"command %d of %s (term %d): its group reported %v after its supervisor's SIGKILL at %s (allowed %v for the guard's kill)",
			lt.PID, lt.Identity, lt.Term, late.Sub(crash), k.rel(crash), GuardKillWindow)
	}
	return end
}

// stoppedAlone returns the first fault that stopped the lifetime's
// supervisor alone (a pause, a supervisor freeze, a job-control stop)
// inside the lifetime, before its reaped exit if any.
func (k *commandChecker) stoppedAlone(lt Lifetime) (Fault, bool) {
	for _, f := range sortedFaults(k.run.Faults) {
		if !paused(f.Kind) && f.Kind != FaultJobStop || !f.hits(lt.Identity) || f.Start.Before(lt.Start) {
			continue
		}
		if lt.Exited.Event != "" && !f.Start.Before(lt.Exited.T) {
			continue
		}
		return f, true
	}
	return Fault{}, false
}

// freezeOf returns the first freeze of the lifetime's supervisor that began
// inside the lifetime (before its reaped exit, if any).
func (k *commandChecker) freezeOf(lt Lifetime) (Fault, bool) {
	var out Fault
	found := false
	for _, f := range sortedFaults(k.run.Faults) {
		if f.Kind != FaultFreeze || !f.hits(lt.Identity) || f.Start.Before(lt.Start) {
			continue
		}
		if lt.Exited.Event != "" && !f.Start.Before(lt.Exited.T) {
			continue
		}
		if !found {
			out, found = f, true
		}
	}
	return out, found
}

func (k *commandChecker) describeLT(lt Lifetime) string {
	return fmt.Sprintf("command %d of %s (term %d) ran from %s to %s [ended by %s]",
		lt.PID, lt.Identity, lt.Term, k.rel(lt.Start), k.rel(lt.End), lt.EndedBy)
}

// checkS1 is S1-commands: two command lifetimes never overlap by more than
// ClockSkew, unless a named exception the scenario declared explains the
// overlap (alonePaused, brokeIn); then it is filed as expected.
func (k *commandChecker) checkS1() {
	for i := range k.lts {
		a := k.lts[i]
		for j := i + 1; j < len(k.lts); j++ {
			b := k.lts[j]
			if !b.Start.Before(a.End) {
				continue
			}
			lo, hi := b.Start, earliest(a.End, b.End) // sorted: b starts no earlier than a
			overlap := hi.Sub(lo)
			if overlap <= k.p.ClockSkew || overlap <= 0 {
				continue
			}
			ev := []Event{a.Started, a.Exited, b.Started, b.Exited}
			msg := fmt.Sprintf("two commands ran at once for %v from %s: %s; %s", overlap, k.rel(lo), k.describeLT(a), k.describeLT(b))
			if p, ok := k.alonePaused(a, b); ok && k.excepted(ExceptSupervisorAlonePaused) {
				k.expect(placed(lo, a.Identity, b.Identity), ev, "%s (expected: %s, %s)", msg, ExceptSupervisorAlonePaused, p)
				continue
			}
			if f, ok := k.brokeIn(a, b); ok && k.excepted(ExceptOperatorBreak) {
				k.expect(placed(lo, a.Identity, b.Identity), ev, "%s (expected: %s, %s; ended within %v of it)", msg, ExceptOperatorBreak, f, k.breakAllowanceFor(a, f))
				continue
			}
			k.report(InvCmdS1, placed(lo, a.Identity, b.Identity), ev, "%s", msg)
		}
	}
}

// expect files an overlap under a named exception.
func (k *commandChecker) expect(w where, ev []Event, format string, args ...any) {
	n := len(k.violations)
	k.report(InvCmdS1, w, ev, format, args...)
	k.expected = append(k.expected, k.violations[n])
	k.violations = k.violations[:n]
}

// breakAllowance is how long after a forced loss the holder's command may
// run: the holder hears at its next renew (RenewInterval + RequestTimeout +
// Epsilon), then stops its command (KillGrace, then SIGKILL and the reap,
// KillAllowance). It excuses two commands running at once, so, like the
// forced-break rule, it takes no stall (stall.go).
func (k *commandChecker) breakAllowance() time.Duration {
	return k.p.RenewInterval + k.p.RequestTimeout() + k.p.Epsilon + k.cp.KillGrace + k.cp.KillAllowance
}

// brokeIn finds the forced loss (forcedLoss) that explains a's overlap with
// b: inside a's lifetime, before b started, with a ended within
// breakAllowanceFor of it (+ ClockSkew).
func (k *commandChecker) brokeIn(a, b Lifetime) (Fault, bool) {
	for _, f := range k.run.Faults {
		if forcedLoss(f.Kind) && !f.Start.Before(a.Start) && f.Start.Before(a.End) && !b.Start.Before(f.Start) &&
			!a.End.After(f.Start.Add(k.breakAllowanceFor(a, f)+k.p.ClockSkew)) {
			return f, true
		}
	}
	return Fault{}, false
}

// breakAllowanceFor is how long after the forced loss f a's command may
// run: breakAllowance; or, when a fault that can keep a's supervisor from
// hearing storage (cutOff: a freeze, its way to storage cut) was in place
// at some moment between the loss and RenewInterval + RequestTimeout +
// Epsilon after it, the larger of that and RenewDeadline + KillGrace +
// KillAllowance + Epsilon. Such a supervisor hears of the loss only when it
// resumes or reaches storage again; its guard kills the command at the
// leadership's deadline (at most the renew deadline after the loss) +
// kill-grace, and the forced-break rule holds such a holder to its
// deadline too. A supervisor's crash earns nothing here: its guard ends
// the command at once (killLanded).
func (k *commandChecker) breakAllowanceFor(a Lifetime, f Fault) time.Duration {
	window := k.p.RenewInterval + k.p.RequestTimeout() + k.p.Epsilon
	if cutOffIn(k.run.Faults, a.Identity, f.Start, f.Start.Add(window)) {
		return max(k.breakAllowance(), k.p.RenewDeadline+k.cp.KillGrace+k.cp.KillAllowance+k.p.Epsilon)
	}
	return k.breakAllowance()
}

// alonePaused finds the pause of a's supervisor that explains a's overlap
// with b: begun inside a's lifetime and before b started.
func (k *commandChecker) alonePaused(a, b Lifetime) (Fault, bool) {
	for _, f := range k.run.Faults {
		if f.Kind == FaultPause && f.hits(a.Identity) && !f.Start.Before(a.Start) && f.Start.Before(a.End) && f.Start.Before(b.Start) {
			return f, true
		}
	}
	return Fault{}, false
}

// checkFreezes is the freeze rule: a command frozen with its supervisor
// (FaultFreeze) is dead — its child_exited, or its supervisor's crash after
// the thaw — and silent in its own reports within KillAllowance (+
// ClockSkew) of the freeze's end: the supervisor wakes past its deadline
// and SIGKILLs the group at once. One never reported dead after the thaw
// is a violation too. "At once" needs a machine that runs the supervisor
// when it is due: a miss no larger than the stall the CPU probe measured
// from the thaw to the last sign of life is inconclusive (stall.go).
func (k *commandChecker) checkFreezes() {
	for _, lt := range k.lts {
		if lt.EndedBy != EndFrozen || lt.Resumed.IsZero() {
			continue
		}
		limit := lt.Resumed.Add(k.cp.KillAllowance + k.p.ClockSkew)
		dead := lt.Exited.T // zero when the history never says
		if lt.Exited.Event == "" {
			if t, ok := killedAfter(k.run.Faults, lt.Identity, lt.Resumed); ok {
				dead = t
			}
		}
		last := dead
		for _, a := range k.act {
			if a.Holder == lt.Identity && a.Term == lt.Term && a.At.After(last) {
				last = a.At
			}
		}
		switch {
		case dead.IsZero() && k.end.After(limit):
			k.overrun(InvCmdFreeze, placed(limit, lt.Identity), timing{From: lt.Resumed, Due: limit, Got: k.end}, []Event{lt.Started},
				"%s was frozen with its supervisor until %s and never reported dead after (allowed %v)", k.describeLT(lt), k.rel(lt.Resumed), k.cp.KillAllowance)
		case dead.IsZero():
			k.report(InvCmdFreeze, placed(limit, lt.Identity), []Event{lt.Started},
				"%s was frozen with its supervisor until %s and never reported dead after (allowed %v; the run ended at %s)", k.describeLT(lt), k.rel(lt.Resumed), k.cp.KillAllowance, k.rel(k.end))
		case last.After(limit):
			k.overrun(InvCmdFreeze, placed(limit, lt.Identity), timing{From: lt.Resumed, Due: limit, Got: last}, []Event{lt.Started, lt.Exited},
				"%s was frozen with its supervisor until %s and still ran %v after (allowed %v)", k.describeLT(lt), k.rel(lt.Resumed), last.Sub(lt.Resumed), k.cp.KillAllowance)
		}
	}
}

// checkTerms is S2-commands on terms: every child_started carries a term,
// no term starts two commands, and none is lower than a term started
// before it (by more than ClockSkew).
func (k *commandChecker) checkTerms() {
	first := map[int64]Lifetime{}
	var top *Lifetime
	for i, lt := range k.lts {
		e := lt.Started
		if lt.Term <= 0 {
			k.report(InvCmdS2, placed(e.T, e.Identity), []Event{e}, "command %d of %s started without a fencing term", lt.PID, lt.Identity)
			continue
		}
		if prev, dup := first[lt.Term]; dup {
			k.report(InvCmdS2, placed(e.T, prev.Identity, e.Identity), []Event{prev.Started, e}, "term %d started two commands (%s, %s)",
				lt.Term, k.describeLT(prev), k.describeLT(lt))
			continue
		}
		first[lt.Term] = lt
		if top != nil && lt.Term < top.Term && e.T.Sub(top.Start) > k.p.ClockSkew {
			k.report(InvCmdS2, placed(e.T, e.Identity), []Event{top.Started, e}, "command terms must strictly increase: %s after %s",
				k.describeLT(lt), k.describeLT(*top))
		}
		if top == nil || lt.Term > top.Term {
			top = &k.lts[i]
		}
	}
}

// checkLedger is S2-commands on the commands' ledger: the election's ledger
// rules (checker.checkLedger) with command lifetimes in the place of
// beliefs, so every entry's term was started by a command of the entry's
// holder and stamped before that command's end.
func (k *commandChecker) checkLedger() {
	k.ivs = nil
	for _, lt := range k.lts {
		k.ivs = append(k.ivs, Interval{Identity: lt.Identity, Term: lt.Term, Start: lt.Start, End: lt.End, EndedBy: lt.EndedBy, Started: lt.Started})
	}
	n := len(k.violations)
	k.checker.checkLedger()
	for i := n; i < len(k.violations); i++ {
		k.violations[i].Invariant = InvCmdS2
	}
}

// checkFailovers is L1-commands: after a command exits on its own (cause
// "exited"), the next command (of any supervisor) starts within P·1.1 + ε
// (+ ClockSkew) of its reaped exit. No next start before the run ends is
// inconclusive, not a violation; a start late by no more than the CPU
// probe's stall since the exit is inconclusive too (stall.go).
func (k *commandChecker) checkFailovers() {
	bound := k.p.retry() + k.p.Epsilon
	for _, lt := range k.lts {
		if lt.Cause != "exited" {
			continue
		}
		// From the reaped exit, as its supervisor reported it (the lifetime
		// may have been extended by later activity: that is S1's business).
		exit := lt.Exited.T
		fo := CommandFailover{From: lt, Bound: bound}
		for _, nx := range k.lts {
			if !nx.Start.Before(exit) && (nx.Identity != lt.Identity || nx.PID != lt.PID) {
				fo.To, fo.NewIdentity = nx.Start, nx.Identity
				break
			}
		}
		switch {
		case fo.To.IsZero() && k.end.Sub(exit) < bound:
			fo.Inconclusive = "the run ended before the bound"
		case fo.To.IsZero():
			// The checker cannot tell whether any other supervisor was able
			// to take over; the scenario asserts that one did.
			fo.Inconclusive = "no command started after it"
		default:
			fo.Duration = fo.To.Sub(exit)
			if fo.Duration > bound+k.p.ClockSkew {
				b := timing{From: exit, Due: exit.Add(bound + k.p.ClockSkew), Got: fo.To}
				fo.Stall = k.run.Sched.StallIn(b.From, b.Got)
				k.overrun(InvCmdL1, placed(exit.Add(bound), lt.Identity, fo.NewIdentity), b, []Event{lt.Exited},
					"the next command started %v after %s exited on its own; bound P·1.1 + ε = %v", fo.Duration, k.describeLT(lt), bound)
			}
		}
		k.failovers = append(k.failovers, fo)
	}
}
