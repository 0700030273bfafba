package election

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/internal/storagelog"
)

// busyAnswer is storage's refusal as a Lock reports it (a StorageError).
type busyAnswer struct{ op string }

func (a busyAnswer) Error() string { return a.op + ": 503 ServerBusy" }
func (a busyAnswer) StorageAnswer() (string, int, string, string) {
	return a.op, 503, "ServerBusy", "The server is busy."
}

// lockedBuffer is a log sink the elector and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines whose event is event.
func (l *lockedBuffer) lines(t *testing.T, event string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if s == "" {
			continue
		}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		if m["event"] == event {
			out = append(out, m)
		}
	}
	return out
}

// runWithFault runs an elector whose every storage call fails with fault,
// from before its first poll, logging JSON into the returned buffer.
func runWithFault(t *testing.T, fault error) (*Elector, *electiontest.Lock, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg := DefaultConfig("w1")
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	lock := electiontest.NewStore().NewLock("w1")
	lock.SetFault(func(ctx context.Context, op string) error { return fault })
	e, err := NewElector(cfg, lock, Callbacks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e, lock, logs
}

// Storage that answers every call unexpectedly: the first answer is logged
// at once, the next ones once per lease duration with how many they stand
// for; Ready names the answer. A start without one expected answer is
// start-up, not a failure (docs/architecture.md#the-election, "Expected
// answers"): Status says Starting and Healthy stays nil however long it
// lasts, since a restart cures none of it (a role still propagating, an
// emulator of the wrong version). One expected answer ends the start-up and
// heals Ready.
func TestElector_UnexpectedAnswersAtStartAreReadinessNotHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, lock, logs := runWithFault(t, busyAnswer{op: "acquire"})
		synctest.Wait()
		lines := logs.lines(t, storagelog.Event)
		if len(lines) != 1 || lines[0]["op"] != "acquire" || lines[0]["status"] != float64(503) ||
			lines[0]["code"] != "ServerBusy" || lines[0]["message"] != "The server is busy." || lines[0]["repeated"] != float64(0) ||
			lines[0]["level"] != "WARN" {
			t.Fatalf("after the first poll: storage_error lines %v, want one for acquire 503 ServerBusy, repeated 0, WARN", lines)
		}
		if err := e.Ready(); err == nil || !strings.Contains(err.Error(), "503 ServerBusy") {
			t.Fatalf("Ready() = %v, want it to name 503 ServerBusy", err)
		}
		if !e.Status().Starting {
			t.Fatal("Status().Starting = false before any expected answer from storage")
		}

		time.Sleep(e.cfg.LeaseDuration - time.Millisecond)
		synctest.Wait()
		if n := len(logs.lines(t, storagelog.Event)); n != 1 {
			t.Fatalf("%d storage_error lines within one lease duration, want 1", n)
		}
		time.Sleep(2 * time.Second) // the next poll after a lease duration
		synctest.Wait()
		lines = logs.lines(t, storagelog.Event)
		if len(lines) != 2 || lines[1]["repeated"].(float64) < 12 {
			t.Fatalf("storage_error lines after a lease duration: %v; want a second one standing for the ≥ 12 polls between", lines)
		}
		time.Sleep(10 * e.cfg.LeaseDuration) // as long as roles may take to propagate
		synctest.Wait()
		if err := e.Healthy(); err != nil {
			t.Fatalf("Healthy() = %v %s after a start without an expected answer; start-up is readiness, not health", err, 10*e.cfg.LeaseDuration+e.cfg.LeaseDuration)
		}
		if err := e.Ready(); err == nil || !strings.Contains(err.Error(), "no expected answer from storage yet") {
			t.Fatalf("Ready() = %v, want it to say no expected answer came yet", err)
		}
		if !e.Status().Starting {
			t.Fatal("Status().Starting = false while storage has never answered as expected")
		}

		lock.SetFault(nil) // storage answers as expected again
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if !e.IsLeader() {
			t.Fatal("no leadership once storage answers")
		}
		if e.Status().Starting {
			t.Error("Status().Starting = true after storage answered as expected")
		}
		for name, err := range map[string]error{"Healthy": e.Healthy(), "Ready": e.Ready()} {
			if err != nil {
				t.Errorf("%s() = %v after storage answered as expected", name, err)
			}
		}
	})
}

// An error that is not storage's (a gate in front of the lock refusing
// the acquire) is no storage answer: nothing is logged and health is not
// judged on it.
func TestElector_ErrorsThatAreNotStorageAnswersAreNotReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _, logs := runWithFault(t, errors.New("gate: view is stale"))
		time.Sleep(2 * e.cfg.LeaseDuration)
		synctest.Wait()
		if l := logs.lines(t, storagelog.Event); len(l) != 0 {
			t.Fatalf("storage_error lines for an error that is not storage's: %v", l)
		}
		if err := e.Healthy(); err != nil {
			t.Fatalf("Healthy() = %v for an elector that got no storage answer at all", err)
		}
	})
}
