package chaos

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A process that logs to a pipe whose reader exits dies of its next line
// (SIGPIPE), unless it handles SIGPIPE: the fault is real.
func TestOutputReaderGone_TheNextWriteRaisesSIGPIPE(t *testing.T) {
	p, pipe, _ := startChatty(t)
	f := &OutputReaderGone{Pipe: pipe}
	if err := f.Inject(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if f.Kind() != KindOutputReaderGone || f.Target() != "chatty" {
		t.Fatalf("kind %q target %q", f.Kind(), f.Target())
	}
	if err := f.Inject(ctxT(t, time.Second)); !errors.Is(err, ErrInjected) {
		t.Fatalf("second inject = %v, want ErrInjected", err)
	}
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the chatty fixture still runs 5s after its output's reader went away")
	}
	var ee *exec.ExitError
	if err := p.lastExit(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
		t.Fatalf("fixture ended with %v, want killed by SIGPIPE", err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatalf("remove: %v", err)
	}
}
