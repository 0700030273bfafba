package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/chaos"
)

// The cluster machinery is tested with internal/fakeworker, a small stand-in
// that speaks the worker's flags, endpoints and history format over real
// Azurite leases; the scenarios run the real worker.
func TestMain(m *testing.M) { os.Exit(Main(m)) }

var fake struct {
	once sync.Once
	bin  string
	err  error
}

func fakeCluster(t *testing.T, n int, opts ...Option) (*Local, []Worker) {
	t.Helper()
	fake.once.Do(func() {
		fake.bin, fake.err = buildPackage(harnessModule, "./cluster/internal/fakeworker", "fakeworker")
	})
	if fake.err != nil {
		t.Fatal(fake.err)
	}
	c := NewLocal(t, LocalConfig{Binary: fake.bin})
	ws, err := c.Start(ctxT(t, 30*time.Second), n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// failure runs f with a TB whose Fatalf is captured, and returns the message
// ("" when f did not fail).
func failure(t *testing.T, f func(tb testing.TB)) string {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(rec) }()
	<-done
	return rec.msg
}

type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestLocal_StartsWorkersAndFindsTheOneLeader(t *testing.T) {
	c, ws := fakeCluster(t, 3)
	if len(ws) != 3 || len(c.Workers()) != 3 {
		t.Fatalf("started %d workers, cluster lists %d; want 3", len(ws), len(c.Workers()))
	}
	ids := map[string]bool{}
	for _, w := range ws {
		st, err := w.Status(ctxT(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if st.Identity != w.Identity() || ids[st.Identity] {
			t.Fatalf("worker %s reports identity %q; want it unique and equal", w.Slot(), st.Identity)
		}
		ids[st.Identity] = true
	}
	l := c.WaitLeader(t, 20*time.Second)
	if got := c.Leader(t); got != l {
		t.Fatalf("Leader = %s, WaitLeader = %s", got.Identity(), l.Identity())
	}
	if msg := failure(t, func(tb testing.TB) { c.WaitLeader(tb, 500*time.Millisecond, l.Identity()) }); !strings.Contains(msg, "other than "+l.Identity()) {
		t.Fatalf("WaitLeader excluding the only leader: failure %q", msg)
	}
}

// A failed run without an output directory logs each worker's log tail.
func TestLocal_LogTailsNameEachWorkerAndKeepTheLastLines(t *testing.T) {
	c, ws := fakeCluster(t, 2)
	c.WaitLeader(t, 20*time.Second)
	tails := c.LogTails(2)
	if len(tails) != len(ws) {
		t.Fatalf("%d log tails for %d workers: %q", len(tails), len(ws), tails)
	}
	for i, w := range ws {
		head, rest, _ := strings.Cut(tails[i], "\n")
		if !strings.HasPrefix(head, w.Identity()+"'s log, last ") || strings.Count(rest, "\n") > 1 {
			t.Errorf("tail %d: %q; want %s's log, at most 2 lines", i, tails[i], w.Identity())
		}
	}
}

func TestLocal_LeaderFailsUnlessExactlyOne(t *testing.T) {
	c, _ := fakeCluster(t, 1)
	c.WaitLeader(t, 20*time.Second)
	// A second worker on another lock blob elects itself too: two leaders.
	if _, err := c.Start(ctxT(t, 30*time.Second), 1, Args("--blob", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var msg string
	for time.Now().Before(deadline) {
		if msg = failure(t, func(tb testing.TB) { c.Leader(tb) }); strings.Contains(msg, "found 2") {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	if !strings.Contains(msg, "expected one leader, found 2") {
		t.Fatalf("with two leaders, Leader failed with %q", msg)
	}
	// Pause both: no leader answers.
	for _, w := range c.Workers() {
		if err := c.Inject(ctxT(t, 5*time.Second), &chaos.Pause{}, w); err != nil {
			t.Fatal(err)
		}
	}
	if msg := failure(t, func(tb testing.TB) { c.Leader(tb) }); !strings.Contains(msg, "expected one leader, found 0") {
		t.Fatalf("with every worker paused, Leader failed with %q", msg)
	}
}

func TestLocal_InjectRecordsFaultsAndHealRemovesThem(t *testing.T) {
	c, _ := fakeCluster(t, 2)
	l := c.WaitLeader(t, 20*time.Second)
	id := l.Identity()

	part := &chaos.Partition{}
	if err := c.Inject(ctxT(t, 5*time.Second), part, l); err != nil {
		t.Fatal(err)
	}
	if err := c.Inject(ctxT(t, 5*time.Second), &chaos.Latency{Latency: 10}, nil); !errors.Is(err, chaos.ErrNoTarget) {
		t.Fatalf("latency without a target = %v, want ErrNoTarget", err)
	}
	crash := &chaos.Crash{Restart: true}
	if err := c.Inject(ctxT(t, 10*time.Second), crash, l); err != nil {
		t.Fatal(err)
	}
	if l.Running() {
		t.Fatal("crashed worker still running")
	}
	fs := c.Faults()
	if len(fs) != 2 || fs[0].Kind != "partition" || fs[0].Target != id || fs[1].Kind != "crash" || fs[1].Target != id {
		t.Fatalf("timeline = %+v; want partition then crash, both on %s", fs, id)
	}
	if !fs[0].End.IsZero() || fs[0].Start.After(fs[1].Start) {
		t.Fatalf("timeline times wrong: %+v", fs)
	}

	if err := c.Heal(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Faults() {
		if f.End.IsZero() || f.End.Before(f.Start) {
			t.Fatalf("after Heal, fault %s on %s has end %v (start %v)", f.Kind, f.Target, f.End, f.Start)
		}
	}
	if !l.Running() || l.Identity() != l.Slot()+".2" {
		t.Fatalf("after Heal the crashed slot %s runs=%v as %q; want a second incarnation %s.2", l.Slot(), l.Running(), l.Identity(), l.Slot())
	}
	if got := len(c.proxyOf(l).Toxics()); got != 0 {
		t.Fatalf("%d toxics left on the healed proxy", got)
	}
	// A network fault on the restarted slot is recorded under the new
	// incarnation, the name its history uses, not the slot or proxy name.
	again := &chaos.Partition{}
	if err := c.Inject(ctxT(t, 5*time.Second), again, l); err != nil {
		t.Fatal(err)
	}
	if fs := c.Faults(); fs[len(fs)-1].Target != l.Identity() {
		t.Fatalf("partition on the restarted slot recorded on %q, want %q", fs[len(fs)-1].Target, l.Identity())
	}
	if err := c.Remove(ctxT(t, 10*time.Second), again); err != nil {
		t.Fatal(err)
	}
}

func TestLocal_HistoryReportsLiveness(t *testing.T) {
	c, ws := fakeCluster(t, 3)
	c.WaitLeader(t, 20*time.Second)
	if err := c.Inject(ctxT(t, 5*time.Second), &chaos.Pause{}, ws[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.Inject(ctxT(t, 10*time.Second), &chaos.Crash{}, ws[2]); err != nil {
		t.Fatal(err)
	}
	h, err := c.History(ctxT(t, 30*time.Second), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]bool{ // identity → alive, contending
		ws[0].Identity(): {true, true},
		ws[1].Identity(): {true, false}, // paused: alive, silent
		ws[2].Identity(): {false, false},
	}
	if len(h.Workers) != 3 || len(h.Files) != 3 || len(h.Faults) != 2 {
		t.Fatalf("history has %d workers, %d files, %d faults; want 3, 3, 2", len(h.Workers), len(h.Files), len(h.Faults))
	}
	for _, w := range h.Workers {
		if got := [2]bool{w.Alive, w.Contending}; got != want[w.Identity] {
			t.Errorf("%s: alive, contending = %v, want %v", w.Identity, got, want[w.Identity])
		}
		if _, err := os.Stat(w.History); err != nil {
			t.Errorf("%s: history file: %v", w.Identity, err)
		}
	}
	if h.End.Before(h.Start) {
		t.Fatalf("history window %v..%v", h.Start, h.End)
	}
}

func TestLocal_StopCleansUpEverything(t *testing.T) {
	c, ws := fakeCluster(t, 2)
	if err := c.Inject(ctxT(t, 5*time.Second), &chaos.Pause{}, ws[0]); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, w := range ws {
		inc, _ := w.(*localWorker).current()
		pids = append(pids, inc.cmd.Process.Pid)
	}
	proxy := c.proxyOf(ws[1]).Addr()
	az := c.Azurite().Pid()

	c.Stop()
	c.Stop() // twice is fine
	for _, pid := range append(pids, az) {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if conn, err := net.DialTimeout("tcp", proxy, time.Second); err == nil {
		conn.Close()
		t.Errorf("proxy %s still accepts connections after Stop", proxy)
	}
	for _, w := range ws {
		if w.Running() {
			t.Errorf("%s still running after Stop", w.Identity())
		}
	}
}

func TestContendOps(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       float64
		ok         bool
	}{
		{"op label not first", "blobleader_storage_requests_total{code=\"200\",op=\"renew\"} 4\n", 4, true},
		{"lease ops only", "# HELP x\nblobleader_storage_requests_total{code=\"201\",op=\"acquire\"} 3\nblobleader_storage_requests_total{code=\"200\",op=\"renew\"} 4\nblobleader_storage_requests_total{code=\"201\",op=\"append\"} 9\n", 7, true},
		{"other names: every op", "blobleader_storage_requests_total{op=\"AcquireLease\",code=\"409\"} 2\nblobleader_storage_requests_total{op=\"get\",code=\"200\"} 5\n", 2, true},
		{"no lease op: all ops", "blobleader_storage_requests_total{op=\"poll\",code=\"200\"} 5\n", 5, true},
		{"no counter", "blobleader_is_leader 1\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := contendOps(strings.NewReader(tc.text))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("contendOps = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The renews storage granted reach the history under the worker's slot:
// the checker's crash rule reads them (a killed leader's last renew may be
// granted and never logged).
func TestLocal_HistoryCarriesTheRenewsStorageGranted(t *testing.T) {
	c, ws := fakeCluster(t, 1)
	c.WaitLeader(t, 20*time.Second)
	inc, _ := ws[0].(*localWorker).current()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(inc.history); strings.Contains(string(b), `"renewed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader logged no renew within 20 s")
		}
	}
	h, err := c.History(ctxT(t, 30*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Renews) == 0 {
		t.Fatal("no granted renew in the history: the proxies' record of them is not collected")
	}
	u, err := url.Parse(c.Storage().URL())
	if err != nil {
		t.Fatal(err)
	}
	lock := path.Join(u.Path, c.LockBlob()) // what the checker matches (scenarios.Collect)
	for _, r := range h.Renews {
		if r.Slot != h.Workers[0].Slot || r.Path != lock || r.Answered.Before(r.Arrived) {
			t.Fatalf("granted renew %+v: want slot %q, path %q and arrived ≤ answered", r, h.Workers[0].Slot, lock)
		}
	}
}

// Each worker's requests pass through its own HTTP proxy (behind its
// toxiproxy), so the request-level faults bind to the worker and act on its
// storage calls; the operator faults bind to the lock's blob and container.
func TestLocal_BindsTheRequestAndOperatorFaults(t *testing.T) {
	c, _ := fakeCluster(t, 2)
	l := c.WaitLeader(t, 20*time.Second)

	late := &chaos.LateDelivery{Op: chaos.OpRenew, Delay: 50, Count: 1}
	if err := c.Inject(ctxT(t, 5*time.Second), late, l); err != nil {
		t.Fatal(err)
	}
	if err := late.AwaitHeld(ctxT(t, 10*time.Second), 1); err != nil {
		t.Fatalf("the leader's renew never passed its HTTP proxy: %v", err)
	}
	ds, err := late.AwaitDelivered(ctxT(t, 5*time.Second), 1)
	if err != nil || ds[0].Status != http.StatusOK {
		t.Fatalf("held renew: %+v, %v; want it delivered and answered 200", ds, err)
	}
	if err := c.Inject(ctxT(t, 5*time.Second), &chaos.LostResponse{Op: chaos.OpAcquire}, nil); !errors.Is(err, chaos.ErrNoTarget) {
		t.Fatalf("lost response without a target = %v, want ErrNoTarget", err)
	}

	del := &chaos.DeleteContainer{}
	if err := c.Inject(ctxT(t, 5*time.Second), del, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Storage().NewBlobClient(c.LockBlob()).GetProperties(ctxT(t, 5*time.Second), nil); err == nil {
		// The stand-in may have recreated it already; the record still says it was deleted.
		t.Logf("lock blob back already: the workers recreated it")
	} else if !bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.BlobNotFound) {
		t.Fatal(err)
	}
	if err := c.Heal(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	fs := c.Faults()
	if len(fs) != 2 || fs[0].Kind != "late_delivery" || fs[0].Target != l.Identity() ||
		fs[1].Kind != "delete_container" || fs[1].Target != chaos.TargetAll || fs[0].End.IsZero() {
		t.Fatalf("timeline %+v; want late_delivery on %s then delete_container on *", fs, l.Identity())
	}
	if string(fs[0].Params) != `{"op":"renew","delay":50,"count":1}` {
		t.Fatalf("late_delivery params recorded as %s", fs[0].Params)
	}
}
