package cluster

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The negative control is a separate build: only the binary built with
// -tags negativecontrol takes --unsafe-no-step-down; the production binary
// refuses the flag and its env twin with exit 2.
func TestWorkerBinaries_OnlyTheNegativeControlTakesTheUnsafeFlag(t *testing.T) {
	// run returns the exit code and the last line of output. The production
	// binary gets a complete configuration, so only the refusal can stop it
	// with exit 2 (and the deadline keeps a missing refusal from hanging).
	run := func(bin string, env []string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, lastLine(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), lastLine(out)
		}
		t.Fatalf("run %s: %v", bin, err)
		return -1, ""
	}
	unsafe := UnsafeWorkerBinary(t)
	prod := WorkerBinary(t)
	if got, out := run(unsafe, nil, "--unsafe-no-step-down", "--help"); got != 0 {
		t.Errorf("negative-control binary with --unsafe-no-step-down --help: exit %d, want 0: %s", got, out)
	}
	config := []string{"--connection-string=UseDevelopmentStorage=true", "--listen=127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--unsafe-no-step-down", nil, append([]string{"--unsafe-no-step-down"}, config...)},
		{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=true", []string{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=true"}, config},
	} {
		got, out := run(prod, tc.env, tc.args...)
		if got != 2 || !strings.Contains(out, "unsafe-no-step-down") || !strings.Contains(out, "refused") {
			t.Errorf("production binary with %s: exit %d (%s), want 2 refusing the negative control", tc.name, got, out)
		}
	}
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
