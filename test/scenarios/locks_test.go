package scenarios

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/daprsdk"
)

// Six client processes contend for two resources through two replicas of
// the lock service, while a holder is killed, a replica is killed
// mid-request, a late unlock from an ended holding arrives, storage slows
// (each request held 300 ms each way, below the 2 s request timeout), and
// the lock blobs' container is deleted under their holders. The checker must find
// one holder at a time per resource, increasing terms, a fenced gap-free
// ledger, and the killed holder's lock taken within its bound.
func TestLocks_ContendedThroughReplicasWithFaults(t *testing.T) {
	t.Parallel()
	retryInconclusive(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 2, Clients: 6, Resources: 2,
			Duration: 45 * time.Second, Expiry: 15, Wait: 10})
		if !r.killClientHolding(0) {
			t.Fatal("client c0 never held a lock to be killed holding")
		}
		if !r.killReplica(1) {
			t.Fatal("replica 1 could not be killed with a request in flight there")
		}
		if !r.lateUnlock() {
			t.Fatal("no client held a resource again at a later term: the late unlock could not be sent")
		}
		// The killed holder's lock is taken once its lease has expired; only
		// then is the container deleted, so the handover is measured alone.
		if !await(30*time.Second, r.killedLockTaken) {
			t.Fatal("the killed holder's lock was not taken within 30 s")
		}
		r.slowStorage(ctx, 300*time.Millisecond, 6*time.Second)
		if !await(10*time.Second, func() bool { _, ok := r.openHolding(-1); return ok }) {
			t.Fatal("no lock held to delete under its holder")
		}
		r.deleteLocks(ctx)
		run, res := r.finish()
		t.Logf("%s", lockSummary(run))
		judged(t, "verdict", res.Verdict)
		logHandover(t, r, run)
	})
}

// The waiter killClientHolding starts is the scenario's evidence for LL1:
// it must still be waiting when the killed holder's lease ends, however
// soon after its holder's grant the kill came. Alone with the killed
// client on its resource, no other client can stand in for it.
func TestLocks_KilledHoldersWaiterWaitsAcrossTheLeaseEnd(t *testing.T) {
	t.Parallel()
	retryInconclusive(t, func(t *testing.T) {
		r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 1, Clients: 1, Resources: 1,
			Duration: 20 * time.Second, Expiry: 15, Wait: 10})
		if !r.killClientHolding(0) {
			t.Fatal("client c0 never held a lock to be killed holding")
		}
		run, res := r.finish()
		t.Logf("%s", lockSummary(run))
		judged(t, "verdict", res.Verdict)
		logHandover(t, r, run)
	})
}

// A replica's kill must meet a request in flight there, or the run did not
// test the clients' failover (the checker's evidence rule). One client on
// one resource, uncontended, is answered at once: a kill at an instant of
// the rig's choosing would meet no request; killReplica must make sure one
// is open.
func TestLocks_ReplicaKillMeetsARequestInFlight(t *testing.T) {
	t.Parallel()
	r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 2, Clients: 1, Resources: 1,
		Duration: 20 * time.Second, Expiry: 15, Wait: 10})
	if !r.killReplica(1) {
		t.Fatal("replica 1 could not be killed with a request in flight there")
	}
	run, res := r.finish()
	t.Logf("%s", lockSummary(run))
	for _, v := range res.Violations {
		if v.Invariant == "evidence" && strings.HasPrefix(v.Message, checker.LockFaultKillReplica) {
			t.Fatalf("the replica's kill met no request: %s", v)
		}
	}
	judged(t, "verdict", res.Verdict)
}

// A stall of the rig's own process between the waiter's connection and
// the kill (a busy machine) can outlast the blocker's holding: the window
// in which the kill meets a request is gone. That must cost an attempt,
// not the scenario. The stall here lasts, once, until the blocker's
// holding has ended.
func TestLocks_ReplicaKillOutlivesAStalledWindow(t *testing.T) {
	t.Parallel()
	r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 2, Clients: 1, Resources: 1,
		Duration: 30 * time.Second, Expiry: 15, Wait: 10})
	stalls := 0
	r.stallBeforeKill = func(blocker string) {
		if stalls++; stalls > 1 {
			return
		}
		if !await(30*time.Second, func() bool { _, open := r.openHoldingOf(blocker); return !open }) {
			t.Errorf("the blocker %s still held after 30 s", blocker)
		}
	}
	if !r.killReplica(1) {
		t.Fatal("replica 1 could not be killed with a request in flight there after a stalled window")
	}
	if stalls < 2 {
		t.Fatalf("killReplica made %d attempt(s); the stalled one cannot have killed", stalls)
	}
	run, res := r.finish()
	t.Logf("%s", lockSummary(run))
	judged(t, "verdict", res.Verdict)
}

// Dapr SDK clients — the official JS SDK, unchanged, one over HTTP and one
// over gRPC — contend with curl-style clients for two resources through
// two replicas. The same checker judges the run: one holder at a time per
// resource whoever its client, terms increasing across both kinds, the
// ledger fenced; and both SDK clients held each kind of lock.
func TestLocks_DaprSDKAndCurlClientsContendThroughTwoReplicas(t *testing.T) {
	t.Parallel()
	r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 2, Clients: 3, Resources: 2,
		Duration: 30 * time.Second, Expiry: 15, Wait: 5, SDKClients: []daprsdk.Protocol{daprsdk.HTTP, daprsdk.GRPC}})
	run, res := r.finish()
	t.Logf("%s", lockSummary(run))
	if err := res.Err(); err != nil {
		t.Fatalf("verdict %s: %v", res.Outcome(), err)
	}
	held := map[string]map[string]int{} // client → resource → holdings
	for _, l := range run.Lines {
		if l.Ev == "got" {
			if held[l.Client] == nil {
				held[l.Client] = map[string]int{}
			}
			held[l.Client][l.Resource]++
		}
	}
	for _, c := range []string{"sdk-http-0", "sdk-grpc-1"} {
		if len(held[c]) == 0 {
			t.Fatalf("the SDK client %s never held a lock: the run did not test it (holdings: %v)", c, held)
		}
	}
	t.Logf("holdings per client and resource: %v", held)
}

// The negative control: a service built with -tags negativecontrol grants
// a held lock without the lease. The same checker must fail the run (two
// holders at once, LS1).
func TestLocks_CheckerCatchesALockGrantedWithoutTheLease(t *testing.T) {
	t.Parallel()
	r := startLockRig(t, LockScenario{Service: cluster.UnsafeWorkerBinary(t), Replicas: 2, Clients: 4, Resources: 2,
		Duration: 15 * time.Second, Expiry: 15, Wait: 2})
	run, res := r.finish()
	t.Logf("%s", lockSummary(run))
	if res.Outcome() != checker.VerdictFail {
		t.Fatalf("the checker passed a service that grants without the lease: verdict %s", res.Outcome())
	}
	ls1 := 0
	for _, v := range res.Violations {
		if v.Invariant == "LS1" {
			ls1++
		}
	}
	if ls1 == 0 {
		t.Fatalf("no LS1 violation among %d: %v", len(res.Violations), res.Err())
	}
	t.Logf("caught: %d LS1 violations, e.g. %s", ls1, res.Violations[0])
}

// The lock soak, under `make chaos` only ($BLOBLEADER_CHAOS_DURATION): ten
// clients on three resources through three replicas for the soak's
// duration; a holder killed at the start, then a replica, then storage
// slowed for 10 s, then a late unlock with an ended
// term whenever one can be sent. Judged as the short scenario.
func TestLocks_Soak(t *testing.T) {
	if os.Getenv(EnvDuration) == "" {
		t.Skip("the lock soak runs under make chaos: set " + EnvDuration)
	}
	t.Parallel()
	cfg := SoakFromEnv(t, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+5*time.Minute)
	defer cancel()
	r := startLockRig(t, LockScenario{Service: cluster.WorkerBinary(t), Replicas: 3, Clients: 10, Resources: 3,
		Duration: cfg.Duration, Expiry: 15, Wait: 10})
	if !r.killClientHolding(0) {
		t.Fatal("client c0 never held a lock to be killed holding")
	}
	if !r.killReplica(2) {
		t.Fatal("replica 2 could not be killed with a request in flight there")
	}
	r.slowStorage(ctx, 300*time.Millisecond, 10*time.Second)
	late := 0
	for end := time.Now().Add(cfg.Duration - 25*time.Second); time.Now().Before(end); {
		if r.lateUnlock() {
			late++
		}
		time.Sleep(5 * time.Second)
	}
	run, res := r.finish()
	t.Logf("%s; %d late unlocks", lockSummary(run), late)
	if late == 0 {
		t.Error("no late unlock could be sent: the soak did not test it")
	}
	judged(t, "verdict", res.Verdict)
}

// logHandover logs how soon after the killed holder's lease could end at
// the latest its lock was taken, failing t when no handover was measured.
func logHandover(t *testing.T, r *lockRig, run checker.LockRun) {
	t.Helper()
	d := checker.LockHandover(run, lockCheckerParams(r.s))
	if len(d) == 0 {
		t.Fatal("no handover after the killed holder was measured")
	}
	t.Logf("killed holder's lock taken %v after the latest its lease at storage could end (negative: before)", d)
}
