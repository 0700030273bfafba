package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// TestDemo_ShardModeHandsAKilledFollowersShardsToLiveWorkersWithoutOverlap
// runs `demo --shards 8 --auto` with the real worker and Azurite: three
// workers balance 8 shards, the follower with the most is SIGKILLed, live
// workers own each of its shards again within L + P·1.1 + ε of the kill (as
// their /status says), the pool is balanced over the two left, and in all
// the demo saw no shard was owned by two workers at once.
func TestDemo_ShardModeHandsAKilledFollowersShardsToLiveWorkersWithoutOverlap(t *testing.T) {
	t.Parallel()
	stalltest.Run(t, func(t *testing.T, p *stalltest.Probe) {
		text, err := runShardDemo(t, buildDemo(t), "--fault", "kill")
		if err != nil {
			inconclusiveDemo(t, p, err, text)
			t.Fatalf("demo --shards 8 --auto: %v\n%s", err, text)
		}
		expectShardTakeover(t, text, "kill", 2)
	})
}

// TestDemo_ShardModeAPausedFollowerWakesWithoutItsShards runs `demo --shards
// 8 --auto --fault pause`: the follower with the most shards is frozen
// (SIGSTOP) past its lease, live workers own its shards again within
// L + P·1.1 + ε, and woken (SIGCONT) it claims none of them — the demo saw
// no shard owned by two workers at once — and the pool balances over all
// three again.
func TestDemo_ShardModeAPausedFollowerWakesWithoutItsShards(t *testing.T) {
	t.Parallel()
	stalltest.Run(t, func(t *testing.T, p *stalltest.Probe) {
		text, err := runShardDemo(t, buildDemo(t), "--fault", "pause")
		if err != nil {
			inconclusiveDemo(t, p, err, text)
			t.Fatalf("demo --shards 8 --auto --fault pause: %v\n%s", err, text)
		}
		expectShardTakeover(t, text, "pause", 3)
	})
}

// TestDemo_ShardModeOverlapCheckCatchesAWorkerThatKeepsItsShards is the
// demo's negative control: the workers are the negative-control build told
// to keep leading after losing a lease (--unsafe-no-step-down), so the
// paused follower, woken, still claims the shards its standbys took. The
// demo must report the overlap, naming that follower, and exit 1. The task
// watchdog is off (--watchdog-timeout=0): woken after more than its 10 s, it
// would drop some or all of those shards at once (seen: one run in three
// with all of them), a safety net that is not what this control tests.
func TestDemo_ShardModeOverlapCheckCatchesAWorkerThatKeepsItsShards(t *testing.T) {
	t.Parallel()
	text, err := runShardDemo(t, buildDemo(t, "negativecontrol"), "--fault", "pause", "--worker-flag=--unsafe-no-step-down", "--worker-flag=--watchdog-timeout=0")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("demo with an unsafe worker: %v, want exit 1\n%s", err, text)
	}
	pause := regexp.MustCompile(`pausing the follower (worker-\d) \(shards ([\d ]+)\)`).FindStringSubmatch(text)
	if pause == nil {
		t.Fatalf("demo output lacks the pause:\n%s", text)
	}
	victim := pause[1]
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^OVERLAP: shard (\d+) owned by (worker-\d) and (worker-\d) at once \(proved (\d+) times\)`).FindAllStringSubmatch(text, -1) {
		if (m[2] == victim || m[3] == victim) && strings.Contains(" "+pause[2]+" ", " "+m[1]+" ") {
			named = append(named, m[0])
		}
	}
	if len(named) == 0 {
		t.Fatalf("no overlap reported on a shard of the paused unsafe follower %s (shards %s):\n%s", victim, pause[2], text)
	}
	t.Logf("negative control caught: %s", strings.Join(named, "; "))
}

// runShardDemo runs `demo --shards 8 --auto` plus args with the binaries in
// dir and returns its output and exit error.
func runShardDemo(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args = append([]string{"--worker", filepath.Join(dir, "blobleader"), "--shards", "8", "--auto"}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "demo"), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	text := string(out)
	// A killed follower is gone before the cleanup, a paused one is back.
	want := "stopped 3 workers and Azurite"
	if slices.Contains(args, "kill") {
		want = "stopped 2 workers and Azurite"
	}
	if !strings.Contains(text, want) {
		t.Errorf("demo did not report its cleanup (%q):\n%s", want, text)
	}
	if out, _ := exec.Command("pgrep", "-f", filepath.Join(dir, "blobleader")).Output(); len(out) > 0 {
		t.Errorf("worker processes left behind: %s", out)
	}
	return text, err
}

// expectShardTakeover checks a passing run's output: after the fault ("kill"
// or "pause") on a follower, each of its shards was owned by another worker
// within the bound; the last table (from /status) shows each shard with one
// live owner, not the victim, over `live` workers; and the overlap check
// compared claims and found none.
func expectShardTakeover(t *testing.T, text, fault string, live int) {
	t.Helper()
	verb := map[string]string{"kill": "killing", "pause": "pausing"}[fault]
	kill := regexp.MustCompile(verb + ` the follower (worker-\d) \(shards ([\d ]+)\)`).FindStringSubmatch(text)
	takeover := regexp.MustCompile(`takeover: the (\d+) shards of (worker-\d) owned again by live workers ([\d.]+)s after the ` + fault).FindStringSubmatch(text)
	check := regexp.MustCompile(`overlap check: (\d+) overlaps in (\d+) answers \((\d+) claims`).FindStringSubmatch(text)
	if kill == nil || takeover == nil || check == nil {
		t.Fatalf("demo output lacks the kill, the takeover or the overlap check:\n%s", text)
	}
	victim := kill[1]
	var killed []int
	for _, f := range strings.Fields(kill[2]) {
		n, _ := strconv.Atoi(f)
		killed = append(killed, n)
	}

	// Each of the victim's shards: a line naming another worker, within the bound.
	bound := (15*time.Second + 1100*time.Millisecond + 5*time.Second).Seconds()
	var retaken []int
	for _, m := range regexp.MustCompile(`(?m)^shard (\d+): (worker-\d) owns it ([\d.]+)s after the `+fault).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		secs, _ := strconv.ParseFloat(m[3], 64)
		if m[2] == victim || secs > bound {
			t.Errorf("shard %d owned by %s %ss after killing %s: want another worker within %.1fs", n, m[2], m[3], victim, bound)
		}
		retaken = append(retaken, n)
	}
	if !slices.Equal(retaken, killed) {
		t.Fatalf("%s owned shards %v, the demo saw %v owned again:\n%s", victim, killed, retaken, text)
	}
	t.Logf("shard-mode demo (%s): %s shards of %s owned again %ss after the %s", fault, takeover[1], victim, takeover[3], fault)

	// The last table, from the workers' /status: every shard one live owner
	// (a woken victim may own shards again: the pool rebalances over it).
	owners, alive, err := lastShardTable(text)
	if err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	if len(owners) != 8 || len(alive) != live {
		t.Fatalf("the last table shows %d shards and %d live workers, want 8 and %d:\n%s", len(owners), len(alive), live, text)
	}
	for n, o := range owners {
		if !alive[o] || o == victim && fault == "kill" {
			t.Errorf("shard %d owned by %q in the last table: want one live worker, not %s", n, o, victim)
		}
	}

	overlaps, _ := strconv.Atoi(check[1])
	answers, _ := strconv.Atoi(check[2])
	brackets, _ := strconv.Atoi(check[3])
	if overlaps != 0 || answers == 0 || brackets == 0 {
		t.Fatalf("overlap check: %d overlaps in %d answers, %d bracketed claims: want none in some:\n%s", overlaps, answers, brackets, text)
	}
	t.Logf("overlap check: %d answers, %d bracketed claims, no overlap", answers, brackets)
}

// lastShardTable parses the last shard table the demo printed: the owner of
// each shard (a row with more than one owner, or none, is an error) and the
// workers that answered /status (a row with a pid and a role).
func lastShardTable(text string) (owners []string, live map[string]bool, err error) {
	i := strings.LastIndex(text, "IDENTITY   PID")
	if i < 0 {
		return nil, nil, errors.New("no table in the demo's output")
	}
	live = map[string]bool{}
	workerRow := regexp.MustCompile(`^\s+(worker-\d)\s+\d+\s+(leader|follower)\s`)
	shardRow := regexp.MustCompile(`^\s+(\d+)\s+(\S+(?: \(unclaimed [\d.]+s\))?(?: \(moving\))?)\s+(\S+)\s+(\S+)\s*$`)
	inShards := false
	for _, line := range strings.Split(text[i:], "\n") {
		line = strings.TrimRight(line, "\r")
		if m := workerRow.FindStringSubmatch(line); m != nil {
			live[m[1]] = true
		}
		if strings.Contains(line, "SHARD  OWNER NOW") {
			inShards = true
			continue
		}
		if !inShards {
			continue
		}
		m := shardRow.FindStringSubmatch(line)
		if m == nil {
			break
		}
		if n, _ := strconv.Atoi(m[1]); n != len(owners) {
			return nil, nil, errors.New("shard rows out of order in the last table")
		}
		if strings.ContainsAny(m[2], "+ ") || m[2] == "-" {
			return nil, nil, errors.New("shard " + m[1] + " shown as " + m[2] + " in the last table: want one owner")
		}
		owners = append(owners, m[2])
	}
	return owners, live, nil
}

// TestDemo_ShardModeRefusesBadFlags: --shards out of range or with --run,
// --fault unknown or without --shards --auto, exits 2 naming the flag,
// before starting anything.
func TestDemo_ShardModeRefusesBadFlags(t *testing.T) {
	t.Parallel()
	dir := buildDemo(t)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--shards", "33"}, "--shards"},
		{[]string{"--shards", "-1"}, "--shards"},
		{[]string{"--shards", "8", "--run"}, "--shards"},
		{[]string{"--shards", "8", "--auto", "--fault", "freeze"}, "--fault"},
		{[]string{"--shards", "8", "--fault", "pause"}, "--fault"},
	} {
		cmd := exec.Command(filepath.Join(dir, "demo"), append([]string{"--worker", filepath.Join(dir, "blobleader")}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "invalid "+tc.flag) || strings.Contains(string(out), "starting Azurite") {
			t.Errorf("demo %v: %v, %q: want exit 2 naming %s, nothing started", tc.args, err, out, tc.flag)
		}
	}
}
