package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A value from an env twin that breaks a rule is reported under the
// variable's name; a value of the wrong form says the form expected; a
// misspelt flag gets a suggestion; none of it dumps the usage. Every
// command: the worker, run and each subcommand.
func TestFlags_ErrorsNameTheSourceAndTheFormInOneLine(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		// Values from the environment name the variable.
		{"worker: env value breaks a rule", map[string]string{"BLOBLEADER_LEASE_DURATION": "10s"}, []string{conn}, []string{"BLOBLEADER_LEASE_DURATION", "10s", "15s"}},
		{"worker: env value of the wrong form", map[string]string{"BLOBLEADER_RETRY_PERIOD": "fast"}, []string{conn}, []string{`invalid BLOBLEADER_RETRY_PERIOD (--retry-period) "fast": must be a duration`, "e.g. 1s"}},
		{"worker: connection string from AZURE_STORAGE_CONNECTION_STRING", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "not-a-connection-string"}, nil, []string{"AZURE_STORAGE_CONNECTION_STRING"}},
		{"worker: env container", map[string]string{"BLOBLEADER_CONTAINER": "Leases"}, []string{conn}, []string{"BLOBLEADER_CONTAINER", `"Leases"`}},
		{"run: bool env twin", map[string]string{"BLOBLEADER_ONCE": "yes"}, []string{"run", conn, "--", "true"}, []string{"BLOBLEADER_ONCE", `"yes"`, "true or false"}},
		{"run: env value breaks a rule", map[string]string{"BLOBLEADER_LEASE_DURATION": "10s"}, []string{"run", conn, "--", "true"}, []string{"BLOBLEADER_LEASE_DURATION", "10s"}},
		{"ledger: env timeout", map[string]string{"BLOBLEADER_TIMEOUT": "0s"}, []string{"ledger", conn}, []string{"BLOBLEADER_TIMEOUT", "0s"}},
		{"shards: env blob", map[string]string{"BLOBLEADER_BLOB": ""}, []string{"shards", conn}, []string{"BLOBLEADER_BLOB"}},
		{"recover-term: env floor", map[string]string{"BLOBLEADER_FLOOR": "-1"}, []string{"recover-term", conn}, []string{"BLOBLEADER_FLOOR", `"-1"`}},
		{"locks: env value breaks a rule", map[string]string{"BLOBLEADER_MAX_WAIT": "90s"}, []string{"locks", conn}, []string{"BLOBLEADER_MAX_WAIT (--max-wait) 1m30s"}},
		{"lock: env value breaks a rule", map[string]string{"BLOBLEADER_CONFLICT_EXIT_CODE": "0"}, []string{"lock", "r", conn, "--", "true"}, []string{"BLOBLEADER_CONFLICT_EXIT_CODE (--conflict-exit-code) 0"}},
		{"lock: env value of the wrong form", map[string]string{"BLOBLEADER_WAIT": "soon"}, []string{"lock", "r", conn, "--", "true"}, []string{"BLOBLEADER_WAIT", `"soon"`, "e.g."}},
		{"lock: run's env value breaks a rule", map[string]string{"BLOBLEADER_LEASE_DURATION": "10s"}, []string{"lock", "r", conn, "--", "true"}, []string{"BLOBLEADER_LEASE_DURATION (--lease-duration) 10s"}},
		// Values of the wrong form say the form.
		{"worker: duration without a unit", nil, []string{conn, "--lease-duration", "20"}, []string{"--lease-duration", `"20"`, "e.g. 15s"}},
		{"worker: shards not a number", nil, []string{conn, "--shards", "eight"}, []string{"--shards", `"eight"`, "whole number"}},
		{"worker: flag without its value", nil, []string{conn, "--lease-duration"}, []string{"--lease-duration", "needs a value"}},
		{"run: kill grace without a unit", nil, []string{"run", conn, "--kill-grace", "1", "--", "true"}, []string{"--kill-grace", `"1"`, "e.g. 1s"}},
		{"run: once with a value", nil, []string{"run", conn, "--once=yes", "--", "true"}, []string{"--once", `"yes"`, "true or false"}},
		{"ledger: timeout without a unit", nil, []string{"ledger", conn, "--timeout", "5"}, []string{"--timeout", `"5"`, "e.g."}},
		{"shards: json with a value", nil, []string{"shards", conn, "--json=maybe"}, []string{"--json", `"maybe"`, "true or false"}},
		// Misspelt flags get a suggestion.
		{"worker: misspelt flag", nil, []string{conn, "--lease-durat", "20s"}, []string{"--lease-durat", "did you mean --lease-duration?"}},
		{"worker: misspelt flag with =", nil, []string{conn, "--renew-intervall=2s"}, []string{"did you mean --renew-interval?"}},
		{"run: misspelt flag", nil, []string{"run", conn, "--kil-grace=1s", "--", "true"}, []string{"did you mean --kill-grace?"}},
		{"ledger: misspelt flag", nil, []string{"ledger", conn, "--verfy"}, []string{"did you mean --verify?"}},
		{"shards: misspelt flag", nil, []string{"shards", conn, "--jsn"}, []string{"did you mean --json?"}},
		{"status: misspelt flag", nil, []string{"status", "--ulr", "http://127.0.0.1:1"}, []string{"did you mean --url?"}},
		{"recover-term: misspelt flag", nil, []string{"recover-term", conn, "--flor", "5"}, []string{"did you mean --floor?"}},
		{"locks: misspelt flag", nil, []string{"locks", conn, "--max-wiat=1s"}, []string{"did you mean --max-wait?"}},
		{"lock: misspelt flag", nil, []string{"lock", "r", conn, "--wiat=1s", "--", "true"}, []string{"did you mean --wait?"}},
		{"lock: misspelt run flag", nil, []string{"lock", "r", conn, "--kil-grace=1s", "--", "true"}, []string{"did you mean --kill-grace?"}},
		{"lock: flag without its value", nil, []string{"lock", "r", conn, "--wait", "--", "true"}, []string{"--wait"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := []string{"AZURE_STORAGE_CONNECTION_STRING="}
			for k, v := range tc.env {
				env = append(env, k+"="+v)
			}
			code, stdout, stderr := runBinary(t, env, tc.args...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want...)
			if strings.Contains(stderr, "Usage") || strings.Contains(stderr, "parse error") {
				t.Fatalf("the error dumps usage or says only \"parse error\":\n%s", stderr)
			}
		})
	}
}

// runBinary runs the binary with env added to ours and returns its exit
// code, stdout and stderr; it must exit within 20 s.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errw bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errw
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("blobleader %v did not exit within 20s; stderr:\n%s", args, errw.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errw.String()
}

// A flag beats its env twin even when the twin's value is malformed: the
// command line's value is used and the twin is never judged; and --help
// prints the usage (exit 0) whatever the environment holds. Every command.
func TestFlags_AFlagBeatsAMalformedEnvTwinAndHelpIgnoresIt(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	bad := []string{"AZURE_STORAGE_CONNECTION_STRING=", "BLOBLEADER_LEASE_DURATION=bogus", "BLOBLEADER_TIMEOUT=soon", "BLOBLEADER_MAX_WAIT=long", "BLOBLEADER_WAIT=soon"}
	for _, tc := range []struct {
		name string
		args []string
		want string // the refusal the command line earns, naming the flag
	}{
		// Each command line sets the malformed twin's flag well, then
		// breaks another rule, so the command exits 2 before it starts.
		{"worker", []string{conn, "--lease-duration", "20s", "--tick", "1ms"}, "--tick"},
		{"run", []string{"run", conn, "--lease-duration", "20s", "--kill-grace", "1", "--", "true"}, "--kill-grace"},
		{"ledger", []string{"ledger", conn, "--timeout", "5s", "--verfy"}, "did you mean --verify?"},
		{"locks", []string{"locks", conn, "--max-wait", "5s", "--max-wiat=1s"}, "did you mean --max-wait?"},
		{"lock", []string{"lock", "r", conn, "--wait", "5s", "--lease-duration", "20s", "--conflict-exit-code", "0", "--", "true"}, "--conflict-exit-code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, bad, tc.args...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want)
			if strings.Contains(stderr, "bogus") || strings.Contains(stderr, "soon") || strings.Contains(stderr, "long") {
				t.Fatalf("the env twin the command line overrides was judged:\n%s", stderr)
			}
		})
		t.Run(tc.name+" --help", func(t *testing.T) {
			t.Parallel()
			args := []string{"--help"}
			if tc.name != "worker" {
				args = []string{tc.name, "--help"}
			}
			code, stdout, stderr := runBinary(t, bad, args...)
			if code != 0 || !strings.Contains(stdout, "BLOBLEADER_") || stderr != "" {
				t.Fatalf("blobleader %v with malformed env twins: exit %d, want 0 and the usage on stdout; stdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
			}
		})
	}
}
