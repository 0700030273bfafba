package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// The supervisor (and everything between it and the command) catches
// SIGPIPE so that a log reader gone cannot kill it; the command must still
// start with SIGPIPE (and every other signal) as the supervisor's own caller
// left it: an ignored signal would be inherited across exec and change what
// the command does (`yes | head` in it would loop on EPIPE instead of dying).
// What the caller itself ignores is not ours to change (GNU make, for one,
// starts its recipes with signals 32 and 33 ignored), so the command's masks
// are compared with this test process's own, which starts the supervisor.
func TestRun_TheCommandStartsWithNoSignalIgnoredOrBlocked(t *testing.T) {
	t.Parallel()
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	az := azuritetest.StartT(t)
	s := startSupervisor(t, az.ConnectionString(), "run-signals", "sig", []string{"--once"}, "cat", "/proc/self/status")
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0; output:\n%s", code, s.out)
	}
	const sigpipe = uint64(1) << (13 - 1)
	for _, field := range []string{"SigIgn", "SigBlk"} {
		inherited := signalMask(t, field, string(self))
		mask := signalMask(t, field, s.out.String())
		if added := mask &^ inherited; added != 0 {
			t.Errorf("the command starts with %s %016x, its supervisor's caller %016x: %016x added (SIGPIPE is bit %d), want nothing added", field, mask, inherited, added, 13-1)
		}
		if mask&sigpipe != 0 {
			t.Errorf("the command starts with SIGPIPE in %s (%016x), want it at its default action", field, mask)
		}
	}
}

// signalMask reads a signal mask field (SigIgn, SigBlk) of a /proc/<pid>/status text.
func signalMask(t *testing.T, field, status string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + field + `:\s*([0-9a-f]+)$`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("no %s line in:\n%s", field, status)
	}
	mask, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask
}
