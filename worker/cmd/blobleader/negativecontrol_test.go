package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// The negative control (a leader that never steps down) exists only so the
// chaos suite can prove its checker catches an unsafe elector. A stray flag
// or env var must never switch it on in a shipped binary: the binary that
// `go build` makes refuses both, naming the build tag that has it.
func TestWorker_ProductionBinaryRefusesTheNegativeControl(t *testing.T) {
	t.Parallel()
	// If the refusal is missing, these workers would start: keep them off
	// well-known ports.
	conn, listen := "--connection-string="+goodConn, "--listen=127.0.0.1:0"
	tests := []struct {
		name string
		env  []string
		args []string
	}{
		{"flag", nil, []string{conn, "--unsafe-no-step-down"}},
		{"flag with single dash", nil, []string{conn, "-unsafe-no-step-down"}},
		{"flag =true", nil, []string{conn, "--unsafe-no-step-down=true"}},
		{"flag =false is refused too", nil, []string{conn, "--unsafe-no-step-down=false"}},
		{"env var", []string{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=true"}, []string{conn}},
		{"env var =1", []string{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=1"}, []string{conn}},
		{"env var empty", []string{"BLOBLEADER_UNSAFE_NO_STEP_DOWN="}, []string{conn}},
		{"early break flag", nil, []string{conn, "--unsafe-early-break"}},
		{"early break env var", []string{"BLOBLEADER_UNSAFE_EARLY_BREAK=1"}, []string{conn}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tt.env...)
			code, out := runWorkerCmd(t, env, append(tt.args, listen)...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2 (refused); output:\n%s", code, out)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 {
				t.Fatalf("want a one-line message, got %d lines:\n%s", len(lines), out)
			}
			flag := "--unsafe-no-step-down"
			if strings.Contains(tt.name, "early break") {
				flag = "--unsafe-early-break"
			}
			for _, want := range []string{flag, "-tags negativecontrol"} {
				if !strings.Contains(out, want) {
					t.Fatalf("message does not mention %q:\n%s", want, out)
				}
			}
		})
	}
}

// A binary built with -tags negativecontrol accepts the flag (and its env
// twin) and really runs unsafe: its leadership carries no valid_until.
func TestWorker_NegativeControlBuildRunsUnsafe(t *testing.T) {
	t.Parallel()
	tagged := filepath.Join(t.TempDir(), "blobleader-negativecontrol")
	if out, err := exec.Command("go", "build", "-tags", "negativecontrol", "-o", tagged, ".").CombinedOutput(); err != nil {
		t.Fatalf("build with -tags negativecontrol: %v\n%s", err, out)
	}
	az := azuritetest.StartT(t)
	for _, via := range []string{"flag", "env"} {
		t.Run(via, func(t *testing.T) {
			hist := filepath.Join(t.TempDir(), "h.jsonl")
			cmd := exec.Command(tagged, "--identity", "unsafe-"+via, "--listen", anyPort,
				"--history", hist, "--container", "nc-"+via, "--log-format", "json")
			cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString())
			if via == "flag" {
				cmd.Args = append(cmd.Args, "--unsafe-no-step-down")
			} else {
				cmd.Env = append(cmd.Env, "BLOBLEADER_UNSAFE_NO_STEP_DOWN=true")
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			base := startedURL(t, "worker unsafe-"+via, stderr.String)
			awaitServing(t, base)
			awaitRole(t, base, "leader")
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("SIGTERM: exit %v, want 0; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "UNSAFE") {
				t.Errorf("the unsafe worker did not warn on stderr:\n%s", stderr.String())
			}
			started := historyEvents(t, hist, "started_leading")
			if len(started) != 1 {
				t.Fatalf("history has %d started_leading, want 1", len(started))
			}
			if v, ok := started[0]["valid_until"]; ok {
				t.Fatalf("unsafe started_leading carries valid_until %v; the control is not on", v)
			}
		})
	}
}

// historyEvents returns the records of kind event in a JSONL history file.
func historyEvents(t *testing.T, path, event string) []map[string]any {
	t.Helper()
	return fileLines(t, path, "history", event)
}

// awaitServing waits (bounded) until a worker answers /status.
func awaitServing(t *testing.T, base string) {
	t.Helper()
	waitFor(t, base+" serving /status", 10*time.Second, func() (bool, string) {
		resp, err := http.Get(base + "/status")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
}
