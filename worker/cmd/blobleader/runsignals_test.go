package main

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// The supervisor (and everything between it and the command) catches
// SIGPIPE so that a log reader gone cannot kill it; the command must still
// start with SIGPIPE (and every other signal) at its default action: an
// ignored signal would be inherited across exec and change what the command
// does (`yes | head` in it would loop on EPIPE instead of dying).
func TestRun_TheCommandStartsWithNoSignalIgnoredOrBlocked(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	s := startSupervisor(t, az.ConnectionString(), "run-signals", "sig", []string{"--once"}, "cat", "/proc/self/status")
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0; output:\n%s", code, s.out)
	}
	for _, field := range []string{"SigIgn", "SigBlk"} {
		m := regexp.MustCompile(`(?m)^` + field + `:\s*([0-9a-f]+)$`).FindStringSubmatch(s.out.String())
		if m == nil {
			t.Fatalf("the command's /proc/self/status has no %s line:\n%s", field, s.out)
		}
		mask, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if mask != 0 {
			t.Errorf("the command starts with %s %016x (SIGPIPE is bit %d), want no signal ignored or blocked", field, mask, 13-1)
		}
	}
}
