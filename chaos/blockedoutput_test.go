package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the pipe's destination, read while the drain writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// startChatty starts the fixture in "chatty" mode (a stderr line before each
// beat) with its stdout and stderr on a new OutputPipe.
func startChatty(t *testing.T) (*proc, *OutputPipe, *lockedBuffer) {
	t.Helper()
	dst := &lockedBuffer{}
	pipe, err := NewOutputPipe("chatty", dst)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, mode: "chatty", beat: filepath.Join(t.TempDir(), "beat")}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fixtureEnv+"=chatty", "CHAOS_FIXTURE_BEAT="+p.beat)
	cmd.Stdout, cmd.Stderr = pipe.Writer(), pipe.Writer()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pipe.Started(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErrs = append(p.exitErrs, err)
		p.mu.Unlock()
		close(exited)
	}()
	p.cmd, p.exited, p.n = cmd, exited, 1
	t.Cleanup(func() {
		p.kill()
		if err := pipe.Close(ctxT(t, 5*time.Second)); err != nil {
			t.Errorf("close the pipe after the process exited: %v", err)
		}
	})
	if err := p.waitBeating(ctxT(t, 10*time.Second), -1); err != nil {
		t.Fatal(err)
	}
	return p, pipe, dst
}

func TestBlockedOutput_BlocksTheProcessUntilRemoved(t *testing.T) {
	p, pipe, dst := startChatty(t)
	f := &BlockedOutput{Pipe: pipe}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	// The fixture writes stderr before every beat (every 5 ms): with the
	// pipe full its beat must stop moving, and stay stopped. Watch it for
	// 500 ms (100 beats' worth): the property is that nothing happens.
	frozen := p.beats()
	watch := ctxT(t, 500*time.Millisecond)
	if err := p.waitBeating(watch, frozen+1); err == nil {
		t.Fatalf("the fixture kept beating (%d → %d) with its stderr a full pipe", frozen, p.beats())
	}
	before := len(dst.Bytes())

	if err := f.Remove(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()+1); err != nil {
		t.Fatalf("after Remove the fixture does not beat again: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("second remove should be a no-op: %v", err)
	}
	// What it wrote reached the destination, and none of the padding did.
	waitFor(t, "output reaching the destination after Remove", 5*time.Second, func() (bool, string) {
		n := len(dst.Bytes())
		return n > before, fmt.Sprintf("%d bytes, %d before Remove", n, before)
	})
	if out := dst.Bytes(); bytes.IndexByte(out, 0) >= 0 || !bytes.Contains(out, []byte(`"msg":"beat"`)) {
		t.Fatalf("destination has padding or no beat lines: %q", out[max(0, len(out)-200):])
	}
}

func TestBlockedOutput_HonoursCancelledContext(t *testing.T) {
	p, pipe, _ := startChatty(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &BlockedOutput{Pipe: pipe}
	if err := f.Inject(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("inject = %v, want context.Canceled", err)
	}
	if err := p.waitBeating(ctxT(t, 5*time.Second), p.beats()+1); err != nil {
		t.Fatalf("a cancelled Inject blocked the output: %v", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove of a fault never injected = %v, want nil", err)
	}
}

func TestBlockedOutput_NoPipeIsNoTarget(t *testing.T) {
	if err := (&BlockedOutput{}).Inject(ctxT(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("inject without a pipe = %v, want ErrNoTarget", err)
	}
}
