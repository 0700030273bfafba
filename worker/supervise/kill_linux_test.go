package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// confinedT makes a cgroup for the test below this process's own, in which
// what a test starts can be killed as a whole at its end (cgroup.kill):
// a fork-walker that escaped its supervisor never outlives the test. It
// skips, naming why, where no cgroup can be made.
func confinedT(t *testing.T) string {
	t.Helper()
	mount, err := cgroup2Mount()
	if err != nil {
		t.Skipf("a fork-walker runs only confined in a cgroup of the test's: %v", err)
	}
	own, err := ownCgroup()
	if err != nil {
		t.Skipf("a fork-walker runs only confined in a cgroup of the test's: %v", err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	dir := filepath.Join(mount, own, "supervise-test-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("a fork-walker runs only confined in a cgroup of the test's (root or a delegated cgroup): %v", err)
	}
	t.Cleanup(func() {
		_ = cgroupKill(dir)
		waitFor(t, "the test's cgroup "+dir+" empty after cgroup.kill", 10*time.Second, func() (bool, string) {
			return !cgroupPopulated(dir), fmt.Sprintf("cgroup.procs %v", cgroupPids(dir))
		})
		if err := removeTree(dir, 200); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	return dir
}

// A command runs a fork-walker (it forks, calls setsid and exits every few
// milliseconds: one reading of /proc misses it), in tree mode. Its
// supervisor stops the group, or is SIGKILLed (its shim then kills the
// lineage): either way, nothing of it may be left. A kill loop that
// stopped after a reading that saw nothing let it live.
func TestKill_AForkWalkerDiesWithItsLineage(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		for _, tc := range []struct{ name, stop string }{
			{"the supervisor stops the group", "term"},
			{"the supervisor is SIGKILLed", "kill"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cg := confinedT(t)
				dir := t.TempDir()
				pidfile, walks := filepath.Join(dir, "pids"), filepath.Join(dir, "walks")
				spec := helperSpec("walker-supervisor", "HELPER_PIDFILE="+pidfile, "HELPER_WALKS="+walks, "HELPER_STOP="+tc.stop)
				sup := exec.Command("sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}, spec.Args...)...)
				sup.Env = append(spec.Env, "PATH="+os.Getenv("PATH"))
				var out strings.Builder
				sup.Stdout, sup.Stderr = &out, os.Stderr
				if err := sup.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan struct{})
				go func() { _ = sup.Wait(); close(exited) }()
				t.Cleanup(func() { _ = sup.Process.Kill(); <-exited })
				pidsIn(t, pidfile, 1) // the walker has hopped
				began := time.Now()
				if tc.stop == "kill" {
					if err := sup.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
				}
				await(t, exited, 10*time.Second, "the supervisor's end")
				for cgroupPopulated(cg) {
					// A wait, not a bound: an escaped walker runs for good; the
					// kill rounds of one that did not need the machine to run
					// them, so the 2 s last as long as the machine stalled.
					if stall := sp.StallIn(began, time.Now()); time.Since(began) > 2*time.Second+stall {
						t.Fatalf("processes %v still run in the test's cgroup 2 s (plus the %v the machine stalled) after the supervisor's end: the walker (hops %d) escaped",
							cgroupPids(cg), stall.Round(time.Millisecond), len(waitLines(walks, 0, 0)))
					}
					time.Sleep(killRound)
				}
				if tc.stop == "term" {
					judgeWalkerStop(t, sp, out.String())
				}
				t.Logf("the walker hopped %d×16 times; nothing left %v after", len(waitLines(walks, 0, 0)), time.Since(began).Round(time.Millisecond))
			})
		}
	})
}

// walkerGrace is the grace of the walker-supervisor's Stop.
const walkerGrace = 50 * time.Millisecond

// judgeWalkerStop judges the Stop a walker-supervisor reported on its
// output: nil passes; one that gave up (ErrSurvived) on a group reaped
// after all is judged as stopT judges it (judgeStop); anything else fails.
func judgeWalkerStop(t *testing.T, sp *stalltest.Probe, out string) {
	t.Helper()
	field := func(name string) string {
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(line, name+"="); ok {
				return v
			}
		}
		return ""
	}
	stop := field("STOP")
	if stop == "<nil>" {
		return
	}
	began, err1 := strconv.ParseInt(field("BEGAN"), 10, 64)
	after, err2 := strconv.ParseInt(field("REAPED_AFTER"), 10, 64)
	if !strings.Contains(stop, ErrSurvived.Error()) || err1 != nil || err2 != nil {
		t.Fatalf("Stop did not report the group gone: %q", out)
	}
	at := time.Unix(0, began)
	judgeStop(t, sp, errors.New(stop), at, walkerGrace, at.Add(time.Duration(after)))
}

// leftoversReapedT makes sure that what t leaves to this process is
// reaped by t's end. Once a test has called Start this process is a
// subreaper, so the orphans of a lineage a test killed come to it — the
// thousands of zombies of a frozen subreaper among them — and the next
// test's Stop would pay for reaping them (ten thousand: 0.38 s on a quiet
// machine, seconds beside CPU hogs, which a wake-up probe does not count
// as stall), past KillTimeout. Call it before whatever ends the lineage is
// registered: cleanups run last first.
func leftoversReapedT(t *testing.T) {
	t.Cleanup(func() {
		stranger := &Group{} // a group of none: every shim and guard is pruned
		waitFor(t, "no zombie left to the test process by "+t.Name(), 30*time.Second, func() (bool, string) {
			stranger.reapZombies()
			left := stranger.ourZombies()
			return len(left) == 0, fmt.Sprintf("%d zombie children", len(left))
		})
	})
}

// How long awaitGrowth waits: the count must grow within growthStuck (plus
// the stall the probe measured meanwhile), and reach its goal within
// growthLimit however it grows.
const (
	growthStuck = 10 * time.Second
	growthLimit = 6 * time.Minute
)

// awaitGrowth waits until count() reaches want, for a fixture whose pace
// is the CPU share this test gets (a walker's hops: about 400 a second on a
// quiet 2-core machine, under 100 beside the busy profile), which a
// wake-up probe does not measure: a wait of fixed length misjudges a
// slow machine as a broken fixture. It waits as long as the count keeps
// growing; it fails when the count stood still for growthStuck plus the
// stall measured meanwhile (the fixture is stuck), or at growthLimit (the
// machine is too slow to build it).
func awaitGrowth(t *testing.T, sp *stalltest.Probe, what string, want int, count func() int) {
	t.Helper()
	began := time.Now()
	last, grew := count(), began
	for last < want {
		now := time.Now()
		if now.Sub(began) > growthLimit {
			t.Fatalf("expected %d %s within %v (a fixture, paced by this test's CPU share): %d after %v",
				want, what, growthLimit, last, now.Sub(began).Round(time.Millisecond))
		}
		if stood := now.Sub(grew); stood > growthStuck+sp.StallIn(grew, now) {
			t.Fatalf("expected %d %s: %d for %v (the machine stalled %v meanwhile), not growing",
				want, what, last, stood.Round(time.Millisecond), sp.StallIn(grew, now).Round(time.Millisecond))
		}
		time.Sleep(200 * time.Millisecond)
		if n := count(); n > last {
			last, grew = n, time.Now()
		}
	}
	t.Logf("%d %s after %v", last, what, time.Since(began).Round(time.Millisecond))
}

// A frozen supervisor reaps nothing: each hop of a fork-walker below it
// stays its child, a zombie, and after seconds there are thousands, which
// its guard's kill rounds read (the guard of a frozen supervisor whose
// shim was SIGKILLed, in tree mode: the lineage is the supervisor's). The
// walker's live hop is the subreaper's newest child for a millisecond or
// two; a round reads every zombie, so it must catch the hop without
// waiting for the next round (chaseChildren). The kill loop must end on
// its proof, the lineage gone, within a few rounds.
func TestKill_AWalkerBelowAFrozenSubreaperFullOfZombiesDies(t *testing.T) {
	sp := stalltest.StartT(t)
	leftoversReapedT(t)
	cg := confinedT(t)
	dir := t.TempDir()
	pidfile, walks := filepath.Join(dir, "pids"), filepath.Join(dir, "walks")
	spec := helperSpec("walker-subreaper", "HELPER_PIDFILE="+pidfile, "HELPER_WALKS="+walks)
	sub := exec.Command("sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}, spec.Args...)...)
	sub.Env = append(spec.Env, "PATH="+os.Getenv("PATH"))
	sub.Stderr = os.Stderr
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sub.Wait(); close(exited) }()
	t.Cleanup(func() { _ = sub.Process.Kill(); <-exited })
	root := pidsIn(t, pidfile, 1)[0]
	waitLines(walks, 2, 10*time.Second)
	if err := syscall.Kill(root, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(root, syscall.SIGCONT) }()
	// The zombies of a freeze of seconds, as a guard meets them at its
	// deadline (the walker hops a few hundred times a second).
	const zombies = 10000
	awaitGrowth(t, sp, "children of the frozen subreaper", zombies, func() int { return len(childrenOf(root)) })
	began := time.Now()
	rounds := 0
	gone := killUntilGone(func() bool {
		rounds++
		killTree(0, root, nil)
		return lineageEmpty(root, nil)
	}, began.Add(60*time.Second), nil) // a bound on the test; rounds are the assertion
	took := time.Since(began)
	if !gone {
		t.Fatalf("the kill loop found the lineage of a frozen subreaper with %d children not gone after %v (the machine stalled %v): the walker (hops %d×16) outran it",
			len(childrenOf(root)), took.Round(time.Millisecond), sp.StallIn(began, time.Now()).Round(time.Millisecond), len(waitLines(walks, 0, 0)))
	}
	if pids := cgroupPids(cg); len(pids) != 1 || pids[0] != root {
		t.Fatalf("the kill loop proved the lineage gone, but the test's cgroup still holds %v (want only the subreaper %d)", pids, root)
	}
	// Counted in rounds, not seconds: a round reads every zombie (seconds
	// with ten thousand), and on a machine whose CPU is shared a round takes
	// longer without the walker getting further. A loop the walker outruns
	// keeps needing another round; one that catches the live hop proves the
	// lineage gone in the round of the kill or the next.
	const maxRounds = 6
	if rounds > maxRounds {
		t.Fatalf("the kill loop took %d rounds (%v) to prove the lineage of a frozen subreaper with %d children gone, more than %d: the walker outran it",
			rounds, took.Round(time.Millisecond), len(childrenOf(root)), maxRounds)
	}
	t.Logf("%d children of the frozen subreaper; the walker dead and proved gone %v (%d rounds) after the first round", len(childrenOf(root)), took.Round(time.Millisecond), rounds)
}

// The command nests a cgroup in its own and leaves a job there, out of its
// process group: the group is the whole subtree, so a stop kills the job,
// and the nested cgroup goes with the group's (none is left behind).
func TestStop_ACgroupTheCommandNestedGoesWithTheGroup(t *testing.T) {
	if !CanKillAnyUser() {
		t.Skip("no writable cgroup v2 with cgroup.kill here: tree mode has no nested cgroups")
	}
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		pidfile := filepath.Join(t.TempDir(), "pids")
		g := startT(t, helperSpec("nester", "HELPER_PIDFILE="+pidfile))
		job := pidsIn(t, pidfile, 1)[0]
		await(t, g.Exited(), 10*time.Second, "the command's exit")
		dir := g.Cgroup()
		if got := cgroupPids(dir); !slices.Contains(got, job) {
			t.Fatalf("the group's subtree holds %v, not the nested job %d", got, job)
		}
		if !g.Running() {
			t.Fatal("Running() is false while the nested job runs")
		}
		stopT(t, sp, g, syscall.SIGTERM, 50*time.Millisecond)
		if alive(job) {
			t.Fatalf("the nested job %d still runs after Stop", job)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the group's cgroup %s is still there after Done: %v", dir, err)
		}
	})
}

// What Stop finds of a group past KillTimeout: a runnable member is dying
// (the kill has it; it waits for the CPU), the dead are done, and only a
// member seen in a state SIGKILL ends at two looks in a row — the same
// process, not a new one under its pid — survived it.
func TestSortLeft_OnlyAMemberStuckAtTwoLooksSurvived(t *testing.T) {
	d := proc{pid: 10, state: 'D', start: 1}
	s := proc{pid: 11, state: 'S', start: 1}
	r := proc{pid: 12, state: 'R', start: 1}
	z := proc{pid: 13, state: 'Z', start: 1}
	first := sortLeft([]proc{d, s, r, z}, nil)
	if len(first.stuck) != 0 || len(first.dying) != 1 || len(first.notRunnable) != 2 {
		t.Fatalf("first look: %+v; want none stuck, 12 dying, 10 and 11 not runnable", first)
	}
	reborn := proc{pid: 11, state: 'S', start: 2} // pid 11 reused by another process
	second := sortLeft([]proc{d, reborn, r}, first.notRunnable)
	if len(second.stuck) != 1 || second.stuck[0] != d {
		t.Fatalf("second look: stuck %v; want only 10 (D at both looks)", second.stuck)
	}
	if got := second.String(); !strings.Contains(got, "10 (state D)") || strings.Contains(got, "12") {
		t.Errorf("%q: want it to name 10 and its state, not the dying 12", got)
	}
	if got := sortLeft([]proc{r}, nil).String(); !strings.Contains(got, "12 (state R)") || !strings.Contains(got, "no CPU") {
		t.Errorf("%q: want it to name the dying 12 as waiting for the CPU", got)
	}
	if got := sortLeft(nil, nil).String(); !strings.Contains(got, "no member left") {
		t.Errorf("%q: want it to say no member was left", got)
	}
	// At DyingTimeout a member may have been seen asleep only at the last
	// look: it is left, not stuck, and not "no member".
	if got := sortLeft([]proc{s}, nil).String(); !strings.Contains(got, "11 (state S)") || strings.Contains(got, "no member left") {
		t.Errorf("%q: want it to name 11, seen asleep at one look", got)
	}
	// The hint on D belongs only where a member is in D.
	sleeper := sortLeft([]proc{s}, map[procID]proc{{11, 1}: s})
	if got := sleeper.String(); !strings.Contains(got, "11 (state S)") || strings.Contains(got, "uninterruptible") {
		t.Errorf("%q: want it to name 11 asleep, without the hint on D", got)
	}
	if got := second.String(); !strings.Contains(got, "uninterruptible") {
		t.Errorf("%q: want the hint on D for a member in D", got)
	}
}
