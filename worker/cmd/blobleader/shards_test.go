package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

func TestWorker_InvalidShardsExitsTwoNamingTheFlag(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"above 1024", nil, []string{conn, "--shards=1025"}},
		{"negative", nil, []string{conn, "--shards=-1"}},
		{"not a number", nil, []string{conn, "--shards=many"}},
		{"env twin", []string{"BLOBLEADER_SHARDS=5000"}, []string{conn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.env...)
			code, out := runWorkerCmd(t, env, tc.args...)
			if code != 2 || !strings.Contains(out, "shards") {
				t.Fatalf("exit %d, want 2 with a message naming --shards:\n%s", code, out)
			}
		})
	}
}

func TestWorker_ShardsHelpListsTheFlagAndTheSubcommand(t *testing.T) {
	t.Parallel()
	if code, out := runWorkerCmd(t, nil, "--help"); code != 0 || !strings.Contains(out, "--shards") || !strings.Contains(out, "BLOBLEADER_SHARDS") || !strings.Contains(out, "blobleader shards") {
		t.Fatalf("--help: exit %d, want 0 listing --shards, its env twin and the shards subcommand:\n%s", code, out)
	}
	if code, out := runWorkerCmd(t, nil, "shards", "--help"); code != 0 || !strings.Contains(out, "--json") {
		t.Fatalf("shards --help: exit %d\n%s", code, out)
	}
}

// shardsOf reads /status's shards and, when present, the assignment.
func shardsOf(t *testing.T, base string) (owned []int, assignment map[string]any) {
	t.Helper()
	st := getStatus(t, base)
	raw, ok := st["shards"].([]any)
	if !ok {
		t.Fatalf("/status of a --shards worker lacks a shards list: %v", st)
	}
	for _, v := range raw {
		owned = append(owned, int(v.(float64)))
	}
	a, _ := st["assignment"].(map[string]any)
	return owned, a
}

// Three --shards 4 workers: the shards end balanced (1 or 2 each, every
// shard once), the leader's /status carries the assignment and the
// followers' do not; a follower killed with SIGKILL loses its shards to the
// others; `blobleader shards` prints the leader's summary with progress;
// the history has shard_acquired / shard_released with shard and term.
func TestWorker_ShardsBalancedFailOverAndSummarised(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	dir := t.TempDir()
	const n = 4
	extra := []string{"--shards", fmt.Sprint(n), "--retry-period", "500ms", "--tick", "200ms"}
	url1, w1 := startWorker(t, az.ConnectionString(), "w1", filepath.Join(dir, "w1.jsonl"), extra...)
	awaitRole(t, url1, "leader")
	url2, w2 := startWorker(t, az.ConnectionString(), "w2", filepath.Join(dir, "w2.jsonl"), extra...)
	url3, w3 := startWorker(t, az.ConnectionString(), "w3", filepath.Join(dir, "w3.jsonl"), extra...)

	// balanced waits until the workers at urls own every shard once, each
	// ⌊n/M⌋ or ⌈n/M⌉, and the leader's assignment says the same.
	balanced := func(urls map[string]string, timeout time.Duration) map[int]string {
		t.Helper()
		var balancedOwner map[int]string
		waitFor(t, fmt.Sprintf("%d shards balanced over %v", n, urls), timeout, func() (bool, string) {
			owner := map[int]string{}
			ok := true
			var leaderAssignment map[string]any
			for id, u := range urls {
				owned, a := shardsOf(t, u)
				if k := len(owned); k != n/len(urls) && k != (n+len(urls)-1)/len(urls) {
					ok = false
				}
				for _, s := range owned {
					if owner[s] != "" {
						t.Fatalf("shard %d owned by %s and %s at once", s, owner[s], id)
					}
					owner[s] = id
				}
				if a != nil {
					leaderAssignment = a
				}
			}
			if ok && len(owner) == n && leaderAssignment != nil {
				owners := leaderAssignment["owners"].([]any)
				for s := range n {
					ok = ok && owners[s] == owner[s]
				}
				if ok {
					balancedOwner = owner
					return true, ""
				}
			}
			return false, fmt.Sprintf("owners %v, leader's assignment %v", owner, leaderAssignment)
		})
		return balancedOwner
	}
	all := map[string]string{"w1": url1, "w2": url2, "w3": url3}
	cmds := map[string]*exec.Cmd{"w1": w1, "w2": w2, "w3": w3}
	keepLeadershipLinesOnFailure(t, dir, "w1", "w2", "w3")
	owner := balanced(all, 60*time.Second)
	// w1 led first, but a machine busy enough to starve storage past the
	// renew deadline hands the lead on: the property is the leader's, so
	// the leader is whoever /status says leads.
	leader := assignmentOnTheLeaderOnly(t, all, 30*time.Second)
	var followers []string
	for id := range all {
		if id != leader {
			followers = append(followers, id)
		}
	}
	slices.Sort(followers)

	// Only the leader's listing counts unowned shards; a follower says 0.
	if v := metric(t, all[followers[0]], "blobleader_shards_unowned"); v != 0 {
		t.Errorf("blobleader_shards_unowned = %v on the follower %s, want 0", v, followers[0])
	}

	// Both followers killed at once, and (as an operator would) their
	// shards' leases broken at once: their shards go to the leader. A shard
	// whose standby died with its owner (with two of three members gone,
	// some shard always has one) is assigned and free until the dead
	// members leave the pool (member lease, then grace): the leader says so
	// in its metric and its shards log line until then. Without the break
	// the window would open only when the shard leases expire, which can be
	// after the members left, and then last one poll: too short to be sure
	// the leader's listing falls into it.
	for _, id := range followers {
		if err := cmds[id].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmds[id].Wait()
	}
	breakShardLeases(t, az.ConnectionString(), owner, followers...)
	lurl := all[leader]
	awaitMetric(t, lurl, "blobleader_shards_unowned", func(v float64) bool { return v >= 1 }, 30*time.Second)
	after := balanced(map[string]string{leader: lurl}, 45*time.Second)
	awaitMetric(t, lurl, "blobleader_shards_unowned", func(v float64) bool { return v == 0 }, 10*time.Second)
	// The leader's shards log line (the Azure alert's input) says so too.
	// The line samples the state every retry period and is written through
	// a queue, so it follows the metric by up to a period and a write: it
	// is awaited (bounded), not read once at the moment the metric turned.
	zero := time.Now()
	awaitShardsLines(t, filepath.Join(dir, leader+".jsonl.log"), 10*time.Second)
	t.Logf("the leader's shards line said none %v after its metric did", time.Since(zero).Round(time.Millisecond))
	for s, o := range owner {
		if o == leader && after[s] != o {
			t.Errorf("shard %d moved from %s to %s although its owner lives: only the killed workers' shards had to move", s, o, after[s])
		}
	}

	// The leader's summary, through `blobleader shards`: every shard has an
	// owner among the living and some progress.
	var out string
	waitFor(t, "blobleader shards showing every shard with its owner and progress", 30*time.Second, func() (bool, string) {
		var code int
		code, out = runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()}, "shards", "--container", "status-test")
		return code == 0 && summaryComplete(out, n, after), fmt.Sprintf("exit %d:\n%s", code, out)
	})
	t.Logf("blobleader shards:\n%s", out)

	// A graceful stop of the leader: exit 0; its history shows each shard it
	// held acquired and released under one shard term.
	if err := cmds[leader].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmds[leader].Wait(); err != nil {
		t.Fatalf("SIGTERM: exit %v, want 0", err)
	}
	acq := historyEvents(t, filepath.Join(dir, leader+".jsonl"), "shard_acquired")
	rel := historyEvents(t, filepath.Join(dir, leader+".jsonl"), "shard_released")
	if len(acq) == 0 || len(acq) != len(rel) {
		t.Fatalf("%s's history: %d shard_acquired, %d shard_released; expected each acquisition released on a graceful stop", leader, len(acq), len(rel))
	}
	key := func(r map[string]any) string { return fmt.Sprint(r["shard"], "/", r["term"]) }
	var a, r []string
	for i := range acq {
		if _, ok := acq[i]["shard"].(float64); !ok || acq[i]["term"] == nil {
			t.Fatalf("shard_acquired lacks shard or term: %v", acq[i])
		}
		a, r = append(a, key(acq[i])), append(r, key(rel[i]))
	}
	slices.Sort(a)
	slices.Sort(r)
	if !slices.Equal(a, r) {
		t.Fatalf("%s's acquisitions %v and releases %v differ", leader, a, r)
	}
}

// assignmentOnTheLeaderOnly waits (bounded) for one reading of every
// worker's /status in which exactly one leads and carries the assignment
// and no other carries one, and returns the leader. (Each reading is of
// one moment per worker; a leadership that moves between two reads is
// read again.)
func assignmentOnTheLeaderOnly(t *testing.T, urls map[string]string, timeout time.Duration) string {
	t.Helper()
	var leader string
	waitFor(t, "a reading with one leader carrying the assignment and no follower carrying one", timeout, func() (bool, string) {
		var leaders, withAssignment, last []string
		for id, u := range urls {
			st := getStatus(t, u)
			_, has := st["assignment"].(map[string]any)
			if st["role"] == "leader" {
				leaders = append(leaders, id)
			}
			if has {
				withAssignment = append(withAssignment, id)
			}
			last = append(last, fmt.Sprintf("%s: role %v, assignment %v", id, st["role"], has))
		}
		if len(leaders) == 1 && slices.Equal(withAssignment, leaders) {
			leader = leaders[0]
			return true, ""
		}
		slices.Sort(last)
		return false, fmt.Sprint(last)
	})
	return leader
}

// awaitShardsLines waits (bounded) for the coordinator's shards lines in
// the log at path to show a shard unowned (a WARN naming since when) and,
// after it, none unowned again.
func awaitShardsLines(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	waitFor(t, filepath.Base(path)+"'s shards log lines showing a shard unowned and then none", timeout, func() (bool, string) {
		var sawUnowned, sawNone bool
		for _, l := range logLines(t, path, "shards") {
			switch n, _ := l["unowned"].(float64); {
			case n >= 1 && l["unowned_since"] != "" && l["level"] == "WARN":
				sawUnowned = true
			case n == 0 && sawUnowned && l["unowned_since"] == "":
				sawNone = true
			}
		}
		return sawUnowned && sawNone, fmt.Sprintf("unowned shown %v, back to none after %v", sawUnowned, sawNone)
	})
}

// keepLeadershipLinesOnFailure logs, when t fails, each worker's leadership
// and shards lines (dir/<id>.jsonl.log): who led when, and what the
// coordinator saw, are the evidence a failure here needs.
func keepLeadershipLinesOnFailure(t *testing.T, dir string, ids ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, id := range ids {
			var lines []string
			for _, ev := range []string{"started_leading", "stopped_leading", "shards"} {
				for _, l := range logLines(t, filepath.Join(dir, id+".jsonl.log"), ev) {
					lines = append(lines, fmt.Sprintf("%v %v term=%v reason=%v unowned=%v", l["time"], ev, l["term"], l["reason"], l["unowned"]))
				}
			}
			slices.Sort(lines)
			t.Logf("%s's leadership and shards lines:\n  %s", id, strings.Join(lines, "\n  "))
		}
	})
}

// summaryComplete reports whether `blobleader shards` output lists every
// shard with the expected owner and a progress above 0.
func summaryComplete(out string, n int, owner map[int]string) bool {
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] == "SHARD" {
			continue
		}
		var s int
		var progress int64
		if _, err := fmt.Sscan(f[0], &s); err != nil {
			continue
		}
		if _, err := fmt.Sscan(f[3], &progress); err != nil || progress <= 0 || owner[s] != f[1] {
			return false
		}
		rows++
	}
	return rows == n
}

// Before any leader has published a summary, `blobleader shards` says so
// and exits 1 (not 0 with an empty table).
func TestShardsCmd_NoSummaryYetExitsOne(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()}, "shards", "--container", "empty-pool")
	if code != 1 || !strings.Contains(out, "no shard summary yet") {
		t.Fatalf("exit %d, want 1 saying there is no summary yet:\n%s", code, out)
	}
}

// metric reads an unlabelled metric from the worker at base (fails when
// it has none).
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return v
		}
	}
	t.Fatalf("%s has no metric %s", base, name)
	return 0
}

// awaitMetric polls the metric until ok accepts it, and returns it.
func awaitMetric(t *testing.T, base, name string, ok func(float64) bool, timeout time.Duration) float64 {
	t.Helper()
	var v float64
	waitFor(t, name+" on "+base+" as wanted", timeout, func() (bool, string) {
		v = metric(t, base, name)
		return ok(v), fmt.Sprint(v)
	})
	return v
}

// Values in a text log read as text, not as Go's formatting of maps and
// slices: the shard leader's "assignment published" line.
func TestWorker_ShardAssignmentLineReadsAsText(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w := startCaptured(t, "w1", az.ConnectionString(), "--log-format", "text", "--shards", "2")
	var line string
	await(t, 20*time.Second, "an assignment published line", func() bool {
		for _, l := range strings.Split(w.stderr.String(), "\n") {
			if strings.Contains(l, "assignment published") {
				line = l
				return true
			}
		}
		return false
	})
	if strings.Contains(line, "map[") || strings.Contains(line, "=[") {
		t.Fatalf("the line carries Go formatting: %s", line)
	}
	if !strings.Contains(line, "w1=2") {
		t.Fatalf("the line does not say w1 holds 2 shards as w1=2: %s", line)
	}
}

// breakShardLeases breaks, with no break period, the shard leases the
// given members own (owner: shard → member), as `az storage blob lease
// break` would.
func breakShardLeases(t *testing.T, conn string, owner map[int]string, members ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: conn, Container: "status-test", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for s, o := range owner {
		if !slices.Contains(members, o) {
			continue
		}
		lc, err := lease.NewBlobClient(c.NewBlobClient(fmt.Sprintf("leader-shards/shards/%04d", s)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Fatalf("break shard %d's lease (owner %s): %v", s, o, err)
		}
	}
}
