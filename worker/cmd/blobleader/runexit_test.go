package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blobleader/blobleader/worker/supervise"
)

// A supervisor that must exit without releasing the lease (its command's
// group survived SIGKILL) writes the line that says so before it exits:
// the log queue is flushed, within its bound, before the process ends.
func TestRun_ExitWithoutReleasingTheLeaseIsLoggedBeforeTheExit(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "history.jsonl")
	o, err := parseRunOptions([]string{"--connection-string=" + goodConn, "--listen=127.0.0.1:0", "--history", hist, "--log-format", "json", "--", "true"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	var s *supervisor
	n, err := openNode(&o.options, o.electionConfig(), &stderr, func(n *node) (mode, error) {
		s = newSupervisor(o, n, func() {})
		return s.mode(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	var atExit string
	exited := -1
	osExit = func(code int) { exited, atExit = code, stderr.String() }
	defer func() { osExit = os.Exit }()
	s.abandon(s.log.With("term", 7), 4321, errors.Join(supervise.ErrSurvived, context.DeadlineExceeded))
	if exited != 1 {
		t.Fatalf("exit code %d, want 1", exited)
	}
	if !strings.Contains(atExit, "exiting without releasing the lease") || !strings.Contains(atExit, `"pid":4321`) {
		t.Fatalf("by the time of the exit the log holds:\n%s\nwant the line saying the lease is not released, naming pid 4321", atExit)
	}
}
