package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A start-up refusal built after parsing (the --history file, a taken
// --listen or --control-listen, recover-term's --floor against the stored
// term) names the env twin when the value came from there, as every
// refusal of parsing does: "BLOBLEADER_HISTORY (--history)", not
// "--history".
func TestStartup_RefusalsAfterParsingNameTheEnvTwin(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // the parallel subtests run after this returns
	taken := busy.Addr().String()
	conn := "--connection-string=" + goodConn
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"worker: history", []string{"BLOBLEADER_HISTORY=/nonexistent/x"}, []string{conn, "--listen=127.0.0.1:0"},
			[]string{`invalid BLOBLEADER_HISTORY (--history) "/nonexistent/x": its directory does not exist`}},
		{"run: history", []string{"BLOBLEADER_HISTORY=/nonexistent/x"}, []string{"run", conn, "--listen=127.0.0.1:0", "--", "true"},
			[]string{`invalid BLOBLEADER_HISTORY (--history) "/nonexistent/x"`}},
		{"worker: listen", []string{"BLOBLEADER_LISTEN=" + taken}, []string{conn},
			[]string{"cannot listen on BLOBLEADER_LISTEN (--listen) " + taken, "address already in use"}},
		{"worker: control listen", []string{"BLOBLEADER_CONTROL_LISTEN=" + taken}, []string{conn, "--listen=127.0.0.1:0"},
			[]string{"cannot listen on BLOBLEADER_CONTROL_LISTEN (--control-listen) " + taken}},
		{"lock: listen", []string{"BLOBLEADER_LISTEN=" + taken}, []string{"lock", "r", conn, "--", "true"},
			[]string{"cannot listen on BLOBLEADER_LISTEN (--listen) " + taken}},
		{"locks: listen", []string{"BLOBLEADER_LISTEN=" + taken}, []string{"locks", conn, "--grpc-listen="},
			[]string{"cannot listen on BLOBLEADER_LISTEN (--listen) " + taken}},
		{"flag: still the flag", nil, []string{conn, "--listen=" + taken},
			[]string{"cannot listen on --listen " + taken}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.env...), tc.args...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want...)
		})
	}
}

// recover-term's refusal of a floor below the stored term, decided after
// reading storage, names BLOBLEADER_FLOOR when the floor came from there.
func TestStartup_RecoverTermFloorFromEnvNamesTheTwin(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	term, holder := "10", "h"
	leaderBlobOf(ctx, t, az, holder, term)
	code, stdout, stderr := runBinary(t, []string{"BLOBLEADER_FLOOR=5"}, "recover-term", "--connection-string="+az.ConnectionString())
	requireOneLineUsage(t, code, stdout, stderr, "invalid BLOBLEADER_FLOOR (--floor) 5: the lock's term is already 10")
}
