package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// fakeWorker is a worker's loopback endpoints as the sidecar sees them: its
// control POST /stop (answering code) and its GET /status, whose role began
// at the last stop (the restarted process) or at start.
type fakeWorker struct {
	mu    sync.Mutex
	code  int
	stops int
	since time.Time
	stuck bool // an accepted stop does not bring a new process
}

func (f *fakeWorker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/stop" && r.Method == http.MethodPost:
		f.stops++
		w.WriteHeader(f.code)
		if f.code == http.StatusAccepted && !f.stuck {
			f.since = time.Now().Add(10 * time.Millisecond) // the restarted process
		}
	case r.URL.Path == "/status":
		fmt.Fprintf(w, `{"identity":"ci-w-01","role":"follower","term":3,"since":%q}`, f.since.UTC().Format(time.RFC3339Nano))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeWorker) stopCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops
}

func runSidecar(t *testing.T, sc *Sidecar) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func newStopSidecar(t *testing.T, store *Store, worker *httptest.Server) *Sidecar {
	t.Helper()
	px, err := chaos.NewLoopbackProxy(store.Name, "127.0.0.1:0", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	sc := &Sidecar{Proxy: px, Store: store, Poll: 100 * time.Millisecond, StatusURL: worker.URL + "/status"}
	if worker != nil {
		sc.StopURL = worker.URL + "/stop"
	}
	return sc
}

// The graceful stop on Azure goes harness → plan → sidecar → the worker's
// loopback control endpoint, once per request, and comes back as the
// worker's answer in the sidecar's state.
func TestOffline_SidecarDeliversEachStopRequestOnce(t *testing.T) {
	w := &fakeWorker{code: http.StatusAccepted, since: time.Now()}
	srv := httptest.NewServer(w)
	defer srv.Close()
	store := &Store{C: control(t), Name: "ci-w-01"}
	runSidecar(t, newStopSidecar(t, store, srv))
	ctl := &Controller{Store: store, Poll: 50 * time.Millisecond}

	before := time.Now()
	res, err := ctl.StopWorker(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w.stopCount() != 1 || res.Error != "" || res.At.Before(before.Add(-time.Second)) {
		t.Fatalf("stop result %+v, worker asked %d times; want one accepted request", res, w.stopCount())
	}
	// Later plans (here: a fault and its removal) carry no stop: no second POST.
	id, err := ctl.Apply(ctxT(t, 20*time.Second), &chaos.Latency{Latency: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Remove(ctxT(t, 20*time.Second), id); err != nil {
		t.Fatal(err)
	}
	// The same request rewritten under a new version is not delivered again.
	if err := store.WritePlan(ctxT(t, 5*time.Second), Plan{Version: time.Now().UnixNano(), Faults: []PlanFault{}, Stop: &StopRequest{ID: res.ID, Before: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	// A request that has expired is not delivered either.
	v := time.Now().UnixNano()
	if err := store.WritePlan(ctxT(t, 5*time.Second), Plan{Version: v, Faults: []PlanFault{}, Stop: &StopRequest{ID: "old", Before: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.wait(ctxT(t, 10*time.Second), v); err != nil {
		t.Fatal(err)
	}
	if n := w.stopCount(); n != 1 {
		t.Fatalf("the worker was asked to stop %d times, want once", n)
	}
	// A second request is a new stop.
	if _, err := ctl.StopWorker(ctxT(t, 20*time.Second)); err != nil || w.stopCount() != 2 {
		t.Fatalf("second stop: %v, worker asked %d times, want 2", err, w.stopCount())
	}

	// A worker that refuses (or a sidecar without a stop URL) fails the stop
	// with the reason.
	w.mu.Lock()
	w.code = http.StatusMethodNotAllowed
	w.mu.Unlock()
	if _, err := ctl.StopWorker(ctxT(t, 20*time.Second)); err == nil || !strings.Contains(err.Error(), "405") {
		t.Fatalf("stop refused by the worker: %v, want the worker's 405", err)
	}
}

// A sidecar that restarts remembers the stop it delivered (from its state
// blob) and does not stop the new worker again on reading the same plan.
func TestOffline_RestartedSidecarDoesNotRepeatAStop(t *testing.T) {
	w := &fakeWorker{code: http.StatusAccepted, since: time.Now()}
	srv := httptest.NewServer(w)
	defer srv.Close()
	store := &Store{C: control(t), Name: "ci-w-02"}
	first := newStopSidecar(t, store, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	ctl := &Controller{Store: store, Poll: 50 * time.Millisecond}
	if _, err := ctl.StopWorker(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	second := newStopSidecar(t, store, srv) // same plan blob, still holding the stop
	runSidecar(t, second)
	waitFor(t, "the restarted sidecar's state", 10*time.Second, func() (bool, string) {
		st, ok, err := store.ReadState(context.Background())
		return ok && st.Started.After(first.state.Started) && len(st.Worker) > 0, fmt.Sprintf("state found %v, started %v (the first %v), worker %s, err %v", ok, st.Started, first.state.Started, st.Worker, err)
	})
	if n := w.stopCount(); n != 1 {
		t.Fatalf("the restarted sidecar asked the worker to stop again (%d stops)", n)
	}
}

// RemoteStop is the graceful-stop fault: Inject returns once the worker
// accepted; Remove (Restart) once the restarted process answers.
func TestOffline_RemoteStopStopsAndWaitsForTheRestartedWorker(t *testing.T) {
	w := &fakeWorker{code: http.StatusAccepted, since: time.Now().Add(-time.Hour)}
	srv := httptest.NewServer(w)
	defer srv.Close()
	store := &Store{C: control(t), Name: "ci-w-03"}
	runSidecar(t, newStopSidecar(t, store, srv))
	f := &RemoteStop{Restart: true, Controller: &Controller{Store: store, Poll: 50 * time.Millisecond}, Worker: "ci-w-03"}
	if f.Kind() != chaos.KindGraceful || f.Target() != "ci-w-03" {
		t.Fatalf("kind %s target %s, want graceful on ci-w-03", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctxT(t, 20*time.Second)); err == nil {
		t.Fatal("a second Inject before Remove was accepted")
	}
	if err := f.Remove(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if w.stopCount() != 1 {
		t.Fatalf("worker asked to stop %d times, want 1", w.stopCount())
	}
	// A worker that never comes back fails Remove at its deadline, saying so.
	w.mu.Lock()
	w.stuck, w.since = true, time.Now().Add(-time.Hour) // only the old process's status
	w.mu.Unlock()
	if err := f.Inject(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, 500*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "did not come back") {
		t.Fatalf("Remove with the worker not back: %v", err)
	}
}
