package dropqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

// A writer held shut: Put never waits, the overflow is dropped and counted,
// and once the writer moves the hole is reported in its place, in order.
func TestQueue_DropsWhenFullAndReportsTheHoleInPlace(t *testing.T) {
	stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
		gate := make(chan struct{})
		took := make(chan struct{}, 1) // the writer holds its first item
		var mu sync.Mutex
		var got []string
		write := func(v int) error {
			select {
			case took <- struct{}{}:
			default:
			}
			<-gate
			mu.Lock()
			got = append(got, fmt.Sprint(v))
			mu.Unlock()
			return nil
		}
		hole := func(n, total uint64) {
			mu.Lock()
			got = append(got, fmt.Sprintf("hole %d/%d", n, total))
			mu.Unlock()
		}
		q := New(2, write, hole)
		// 1 is taken by the writer (stuck on gate), 2 and 3 fill the queue.
		if err := q.Put(1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-took:
		case <-time.After(5 * time.Second):
			t.Fatal("the writer did not take the first item within 5 s")
		}
		for _, v := range []int{2, 3} {
			if err := q.Put(v); err != nil {
				t.Fatalf("Put(%d): %v", v, err)
			}
		}
		began := time.Now()
		for _, v := range []int{4, 5} {
			if err := q.Put(v); !errors.Is(err, ErrFull) {
				t.Fatalf("Put(%d) on a full queue: %v, want ErrFull", v, err)
			}
		}
		sp.Bound(t, "Put on a full queue, which must not wait (bound 1 s)", began, time.Second, time.Now())
		if n := q.Dropped(); n != 2 {
			t.Errorf("Dropped() = %d, want 2", n)
		}
		close(gate)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, err := q.Close(ctx); err != nil {
			t.Fatalf("Close: %d unwritten, %v", n, err)
		}
		want := []string{"1", "2", "3", "hole 2/2"}
		if !slices.Equal(got, want) {
			t.Errorf("written %q, want %q", got, want)
		}
		if err := q.Put(6); !errors.Is(err, ErrClosed) {
			t.Errorf("Put after Close: %v, want ErrClosed", err)
		}
		if _, err := q.Close(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close: %v, want ErrClosed", err)
		}
	})
}

// A writer that never moves: Close gives up when its context ends and says
// how many items were not written.
func TestQueue_CloseIsBoundedByItsContext(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	q := New(4, func(int) error { <-stuck; return nil }, func(uint64, uint64) {})
	for v := range 3 {
		if err := q.Put(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	n, err := q.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close on a stuck writer: %v, want the context's deadline", err)
	}
	if n < 2 || n > 3 {
		t.Errorf("Close reported %d unwritten, want 2 or 3 (one may be in the writer)", n)
	}
}

// A write that fails (a full disk) loses its item: counted as dropped, and
// reported as a hole once a write works again.
func TestQueue_CountsAFailedWriteAsDropped(t *testing.T) {
	var mu sync.Mutex
	var got []string
	fail := true
	q := New(8, func(v int) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("no space left on device")
		}
		got = append(got, fmt.Sprint(v))
		return nil
	}, func(n, total uint64) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("hole %d/%d", n, total))
	})
	for i := 1; i <= 3; i++ {
		if err := q.Put(i); err != nil {
			t.Fatal(err)
		}
	}
	stalltest.StartT(t).Await(t, "Dropped() 3 after three failed writes", 5*time.Second, func() (bool, string) {
		n := q.Dropped()
		return n >= 3, fmt.Sprintf("Dropped() = %d", n)
	})
	mu.Lock()
	fail = false
	mu.Unlock()
	if err := q.Put(4); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"hole 3/3", "4"}; !slices.Equal(got, want) {
		t.Fatalf("written %q, want %q", got, want)
	}
}
