package main

import (
	"net"
	"strings"
	"testing"
)

// A BLOBLEADER_* variable that no command reads is a typo until shown
// otherwise: it gets one WARN line naming it and the nearest known one, and
// is never fatal. Variables blobleader itself sets or documents are not
// warned about.
func TestEnv_UnknownVariableIsWarnedWithTheNearestKnownOne(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=", "BLOBLEADER_LEASE_DURATON=20s", "BLOBLEADER_TERM=7", "BLOBLEADER_IDENTITY=x"}
	// The worker logs it (its log format: here JSON) before anything can
	// fail; a busy --listen then ends it with the usual exit 2.
	code, _, stderr := runBinary(t, env, "--connection-string="+goodConn, "--log-format=json", "--listen", busy.Addr().String())
	if code != 2 || strings.Count(stderr, "BLOBLEADER_LEASE_DURATON") != 1 ||
		!strings.Contains(stderr, `"level":"WARN"`) || !strings.Contains(stderr, "BLOBLEADER_LEASE_DURATION") {
		t.Fatalf("worker: exit %d, stderr:\n%s\nwant one JSON WARN line naming BLOBLEADER_LEASE_DURATON and BLOBLEADER_LEASE_DURATION, then exit 2", code, stderr)
	}
	for _, known := range []string{"BLOBLEADER_TERM", "BLOBLEADER_IDENTITY"} {
		if strings.Contains(stderr, known) {
			t.Fatalf("worker warned about %s, which blobleader sets for its commands:\n%s", known, stderr)
		}
	}
	// A command without a log says it on stderr, and goes on.
	code, stdout, stderr := runBinary(t, env, "status", "--url", "http://"+busy.Addr().String()+"/nothing")
	if code != 1 || !strings.Contains(stderr, "BLOBLEADER_LEASE_DURATON") || !strings.Contains(stderr, "did you mean BLOBLEADER_LEASE_DURATION?") {
		t.Fatalf("status: exit %d, stdout %q, stderr:\n%s\nwant a warning naming both and exit 1 (nothing answers)", code, stdout, stderr)
	}
}

// A refused configuration (exit 2) still tells an unknown BLOBLEADER_*
// variable, which is often the reason for the refusal (a misspelt twin
// left the default in force): the commands that write a log refuse before
// it is open, so they print the stderr warning line before the one-line
// refusal; and a refusal after the log told it does not tell it twice.
func TestEnv_UnknownVariableIsToldWhenTheConfigurationIsRefused(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	warning := "blobleader: warning: BLOBLEADER_LEASE_DURATON is not read by any blobleader command: ignored (did you mean BLOBLEADER_LEASE_DURATION?)"
	for _, tc := range []struct {
		name    string
		args    []string
		refusal string
	}{
		{"worker", []string{conn, "--tick", "5ms"}, "invalid --tick 5ms"},
		{"run", []string{"run", conn, "--kill-grace", "5s", "--", "true"}, "invalid --kill-grace 5s"},
		{"lock", []string{"lock", "r", conn, "--wait", "-1s", "--", "true"}, "invalid --wait -1s"},
		{"locks", []string{"locks", conn, "--max-wait", "99s"}, "invalid --max-wait 1m39s"},
		{"ledger", []string{"ledger", conn, "--timeout", "0s"}, "invalid --timeout 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "BLOBLEADER_LEASE_DURATON=20s"}, tc.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 2 || stdout != "" || len(lines) != 2 || lines[0] != warning || !strings.HasPrefix(lines[1], "blobleader: "+tc.refusal) {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and two lines:\n%s\nblobleader: %s…", code, stdout, stderr, warning, tc.refusal)
			}
		})
	}
}
