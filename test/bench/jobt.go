package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// jobT is the testing.TB that test/cluster needs, for a program rather than
// a test: logs go to the job's log, Fatal ends the job's goroutine (as in a
// test) and cleanups run when the job ends. The embedded interface only
// supplies testing.TB's unexported method; every method is implemented here.
type jobT struct {
	testing.TB
	name string
	log  io.Writer
	ctx  context.Context

	mu       sync.Mutex
	failed   bool
	skipped  bool
	msgs     []string
	cleanups []func()
	tmp      []string
}

var _ testing.TB = (*jobT)(nil)

func (t *jobT) Name() string               { return t.name }
func (t *jobT) Helper()                    {}
func (t *jobT) Attr(string, string)        {}
func (t *jobT) Context() context.Context   { return t.ctx }
func (t *jobT) Output() io.Writer          { return t.log }
func (t *jobT) Log(args ...any)            { fmt.Fprintln(t.log, args...) }
func (t *jobT) Logf(f string, args ...any) { fmt.Fprintf(t.log, f+"\n", args...) }
func (t *jobT) Setenv(k, v string)         { t.Fatalf("bench: Setenv(%s) is not supported", k) }
func (t *jobT) Chdir(string)               { t.Fatalf("bench: Chdir is not supported") }
func (t *jobT) ArtifactDir() string        { return t.TempDir() }

func (t *jobT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *jobT) record(msg string) {
	t.mu.Lock()
	t.failed = true
	t.msgs = append(t.msgs, msg)
	t.mu.Unlock()
	fmt.Fprintln(t.log, "ERROR:", msg)
}

func (t *jobT) Error(args ...any)            { t.record(fmt.Sprint(args...)) }
func (t *jobT) Errorf(f string, args ...any) { t.record(fmt.Sprintf(f, args...)) }
func (t *jobT) Fail()                        { t.mu.Lock(); t.failed = true; t.mu.Unlock() }
func (t *jobT) FailNow()                     { t.Fail(); runtime.Goexit() }
func (t *jobT) Fatal(args ...any)            { t.record(fmt.Sprint(args...)); runtime.Goexit() }
func (t *jobT) Fatalf(f string, args ...any) { t.record(fmt.Sprintf(f, args...)); runtime.Goexit() }

func (t *jobT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *jobT) Skip(args ...any)            { t.skip(fmt.Sprint(args...)) }
func (t *jobT) Skipf(f string, args ...any) { t.skip(fmt.Sprintf(f, args...)) }
func (t *jobT) SkipNow()                    { t.skip("skipped") }
func (t *jobT) skip(msg string) {
	t.mu.Lock()
	t.skipped = true
	t.msgs = append(t.msgs, "skipped: "+msg)
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *jobT) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

func (t *jobT) TempDir() string {
	d, err := os.MkdirTemp("", "blobleader-bench-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.mu.Lock()
	t.tmp = append(t.tmp, d)
	t.mu.Unlock()
	return d
}

// finish runs the cleanups, newest first, then removes the temp dirs.
func (t *jobT) finish() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	for _, d := range t.tmp {
		os.RemoveAll(d)
	}
}

// RunJob runs fn like a test body in its own goroutine and returns once it
// and its cleanups are done, with an error if it failed or was skipped.
func RunJob(ctx context.Context, name string, log io.Writer, fn func(t testing.TB)) error {
	t := &jobT{name: name, log: log, ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.finish()
		defer func() {
			if r := recover(); r != nil {
				t.record(fmt.Sprintf("panic: %v", r))
			}
		}()
		fn(t)
	}()
	<-done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed || t.skipped {
		return fmt.Errorf("%s: %v", name, t.msgs)
	}
	return nil
}
