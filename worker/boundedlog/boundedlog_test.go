package boundedlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// stuckWriter blocks every Write until release is closed, and says when the
// first Write is blocked: a stderr pipe nobody reads.
type stuckWriter struct {
	blocked chan struct{} // closed at the first Write
	release chan struct{}
	once    sync.Once

	mu  sync.Mutex
	buf bytes.Buffer
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{blocked: make(chan struct{}), release: make(chan struct{})}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.blocked) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *stuckWriter) lines(t *testing.T) []map[string]any {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes())); sc.Scan(); {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// The property the safety path relies on: with the output stuck, logging
// returns at once, drops beyond the capacity and counts every drop; once the
// output moves, everything queued is written in order, then the count.
func TestSink_StuckOutputNeverBlocksTheCaller(t *testing.T) {
	w := newStuckWriter()
	s := New(slog.NewJSONHandler(w, nil), Options{Capacity: 8})
	log := slog.New(s.Handler()).With("identity", "w1")

	log.Info("first") // taken by the drainer, which then blocks in Write
	waitFor(t, w.blocked, "the drainer's first write")

	const more = 100
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range more {
			log.Warn("renew failed", "i", i)
		}
	}()
	waitFor(t, done, "100 log calls with the output stuck (a blocking handler never returns)")
	if got, want := s.Dropped(), uint64(more-8); got != want {
		t.Fatalf("Dropped = %d, want %d (100 records, 8 queued)", got, want)
	}

	close(w.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lines := w.lines(t)
	if len(lines) != 1+8+1 {
		t.Fatalf("wrote %d lines, want 10 (first, 8 queued, the drop notice): %v", len(lines), lines)
	}
	if lines[0]["msg"] != "first" || lines[0]["identity"] != "w1" {
		t.Errorf("line 0 = %v, want the first record with its logger's attrs", lines[0])
	}
	for i := 1; i <= 8; i++ {
		if lines[i]["msg"] != "renew failed" || lines[i]["i"] != float64(i-1) {
			t.Errorf("line %d = %v, want renew failed i=%d (order kept)", i, lines[i], i-1)
		}
	}
	notice := lines[9]
	if notice["level"] != "WARN" || notice["dropped"] != float64(more-8) {
		t.Errorf("last line = %v, want a WARN with dropped=%d", notice, more-8)
	}
}

// Records keep the time they were logged at, not the time they were written.
func TestSink_RecordsKeepTheirOwnTime(t *testing.T) {
	w := newStuckWriter()
	s := New(slog.NewJSONHandler(w, nil), Options{})
	log := slog.New(s.Handler())
	before := time.Now()
	log.Info("early")
	waitFor(t, w.blocked, "the drainer's first write")
	time.Sleep(50 * time.Millisecond) // the output stays stuck for a while: the delay is the point
	released := time.Now()
	close(w.release)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := w.lines(t)
	if len(lines) != 1 {
		t.Fatalf("lines = %v, want 1", lines)
	}
	at, err := time.Parse(time.RFC3339Nano, lines[0]["time"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// Stamped when written, it would be no earlier than the release: the
	// writer wrote nothing before it. (No bound on a busy machine's delay
	// between the call and its stamp: the order tells the two apart.)
	if at.Before(before) || !at.Before(released) {
		t.Errorf("record time %s is not between the call (%s) and the writer's release (%s): stamped when written, not when logged",
			at.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), released.Format(time.RFC3339Nano))
	}
}

// Close is bounded by its context when the output never moves, and says how
// much was lost; records after Close are dropped and counted.
func TestSink_CloseIsBoundedWhenTheOutputNeverMoves(t *testing.T) {
	w := newStuckWriter()
	defer close(w.release)
	s := New(slog.NewJSONHandler(w, nil), Options{Capacity: 4})
	log := slog.New(s.Handler())
	log.Info("stuck")
	waitFor(t, w.blocked, "the drainer's first write")
	log.Info("queued")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want DeadlineExceeded", err)
	}
	// The failure this catches is a Close that waits for the stuck writer,
	// i.e. for ever; 5 s tells the two apart on any machine, so it needs no
	// stall added (docs/chaos.md#a-busy-machine).
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v with a 100 ms context", took)
	}
	log.Info("after close")
	if got := s.Dropped(); got != 1 {
		t.Errorf("Dropped = %d, want 1 (the record after Close)", got)
	}
	if err := s.Close(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

// Levels are the real handler's: a debug record it would not write is not
// queued (and not counted as dropped).
func TestSink_EnabledIsTheRealHandlers(t *testing.T) {
	var buf bytes.Buffer
	s := New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), Options{})
	log := slog.New(s.Handler()).WithGroup("g")
	log.Debug("hidden")
	log.Info("shown", "k", "v")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if bytes.Contains(buf.Bytes(), []byte("hidden")) || !bytes.Contains(buf.Bytes(), []byte(`"g":{"k":"v"}`)) {
		t.Errorf("output %q: want only the info record, with its group", out)
	}
	if s.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", s.Dropped())
	}
}

func ExampleSink() {
	var out bytes.Buffer
	s := New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: dropTime}), Options{})
	log := slog.New(s.Handler())
	log.Warn("renew failed", "term", 7) // returns at once, whatever the output does
	_ = s.Close(context.Background())
	fmt.Print(out.String())
	// Output: level=WARN msg="renew failed" term=7
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
