package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

func TestShards_FollowerKilled(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsFollowerKilled)
}

func TestShards_LeaderKilledMovesOnlyItsShards(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsLeaderKilled)
}

func TestShards_JoinThenGracefulLeave(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsJoinThenLeave)
}

func TestShards_PartitionedFollower(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsPartitioned)
}

func TestShards_StorageOutageForEveryone(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsStorageOutage)
}

func TestShards_LeaveAfterOutage(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsLeaveAfterOutage)
}

func TestShards_SlowMemberReadsKeepTheCoordinator(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsSlowMemberReads)
}

func TestShards_RollingRestart(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsRollingRestart)
}

// The shards negative control: a worker built with -tags negativecontrol and
// run with --unsafe-no-step-down keeps working its shards after it is cut
// off from storage and their leases expire. The shard checker must report
// shard S1 naming it; a checker that never fails proves nothing.
func TestShards_CheckerReportsShardS1ForUnsafeOwner(t *testing.T) {
	t.Parallel()
	const n = 4
	shards := cluster.Args("--shards", fmt.Sprint(n))
	c := Local(t, 2, shards)
	p := c.Params()
	waitLeader(t, c, takeover(p)) // a safe worker leads the election
	c.Prepare(cluster.Unsafe())
	added, err := c.Start(ctxFor(t, time.Minute), 1, shards, cluster.Unsafe())
	if err != nil {
		t.Fatal(err)
	}
	unsafe := added[0]
	owner := waitBalanced(t, c, n, settle(p)+slack)
	var held []int
	for s, o := range owner {
		if o == unsafe.Identity() {
			held = append(held, s)
		}
	}
	if len(held) == 0 {
		t.Fatalf("the unsafe worker %s owns no shard (%v): the control would show nothing", unsafe.Identity(), owner)
	}
	cut := &chaos.Partition{}
	inject(t, c, cut, unsafe)
	// The others take its shards once the leases expire, while it still
	// claims them.
	deadline := time.Now().Add(takeover(p))
	for {
		taken := 0
		for _, w := range c.Workers() {
			if w.Identity() == unsafe.Identity() {
				continue
			}
			if st, err := w.Status(ctxFor(t, 2*time.Second)); err == nil {
				for _, s := range st.Shards {
					if slices.Contains(held, s) {
						taken++
					}
				}
			}
		}
		if taken == len(held) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the others did not take the unsafe worker's shards %v within %v", held, takeover(p))
		}
		hold(t, 200*time.Millisecond)
	}
	st, err := unsafe.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Shards) == 0 {
		t.Fatalf("the unsafe worker %s no longer claims shards after its leases expired (%+v): the control shows nothing", unsafe.Identity(), st)
	}
	_, _, sres := JudgeShards(t, c, ShardJudging{Shards: n, Name: reportName(t)})
	var s1 []checker.Violation
	for _, v := range sres.Violations {
		if v.Invariant == checker.InvShardS1 {
			s1 = append(s1, v)
		}
	}
	if len(s1) == 0 {
		t.Fatalf("the shard checker did not report shard S1 although %s kept shards %v after losing them; violations: %v", unsafe.Identity(), held, sres.Violations)
	}
	if !strings.Contains(s1[0].Message, unsafe.Identity()) {
		t.Errorf("the shard S1 violation does not name the unsafe worker %s: %s", unsafe.Identity(), s1[0].Message)
	}
	t.Logf("caught as expected (%d shard S1 violations): %s", len(s1), s1[0].Message)
}

func TestShards_AssignmentDeleted(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsAssignmentDeleted)
}

func TestShards_AssignmentRolledBack(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsAssignmentRolledBack)
}

func TestShards_AssignmentCorrupted(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsAssignmentCorrupted)
}
