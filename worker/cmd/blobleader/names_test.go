package main

import (
	"strings"
	"testing"
)

// Names that storage would not keep as written are refused at start (exit
// 2, one line naming the flag, the rule and the value): a backslash (stored
// as "/"), a path segment ending in a dot (Azure drops it; Azurite keeps
// it), empty path segments, and a blob name longer than Azure's 1,024. The
// identity is only checked where it becomes part of a blob name: shard mode
// (member and report blobs) and --history blob.
func TestWorker_NamesStorageWouldRewriteExitTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	long := strings.Repeat("b", 900)
	id200 := strings.Repeat("i", 200)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string // each must appear in the one-line message
	}{
		{"backslash in --blob", nil, []string{conn, `--blob=pool\leader`}, []string{"--blob", `"pool\\leader"`, `"\\"`}},
		{"trailing dot in --blob", nil, []string{conn, "--blob=leader."}, []string{"--blob", `"leader."`, "dot"}},
		{"segment ending in a dot in --blob", nil, []string{conn, "--blob=pool./leader"}, []string{"--blob", "dot"}},
		{"empty segment in --blob", nil, []string{conn, "--blob=pool//leader"}, []string{"--blob", "empty"}},
		{"leading slash in --blob", nil, []string{conn, "--blob=/leader"}, []string{"--blob", "empty"}},
		{"control character in --blob", nil, []string{conn, "--blob=lea\tder"}, []string{"--blob", "control"}},
		{"env twin of --blob", []string{`BLOBLEADER_BLOB=pool\leader`}, []string{conn}, []string{"--blob", `"\\"`}},
		{"ledger subcommand", nil, []string{"ledger", conn, `--blob=pool\leader`}, []string{"--blob", `"\\"`}},
		{"backslash in a shard member's identity", nil, []string{conn, "--shards=4", `--identity=DOMAIN\host`}, []string{"--identity", `"DOMAIN\\host"`, "--shards", `"\\"`}},
		{"trailing dot in a shard member's identity", nil, []string{conn, "--shards=4", "--identity=host.example."}, []string{"--identity", "--shards", "dot"}},
		{"member blob longer than Azure allows", nil, []string{conn, "--shards=4", "--blob=" + long, "--identity=" + id200}, []string{"--identity", "--blob", "1024", "1116"}},
		{"backslash in the identity with --history blob", nil, []string{conn, "--history=blob", `--identity=DOMAIN\host`}, []string{"--identity", "--history blob", `"\\"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.env...)
			code, out := runWorkerCmd(t, env, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 {
				t.Fatalf("%d lines, want one:\n%s", lines, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// The identity is free where it names no blob: in single-task mode it is
// only the lock's holder metadata (a header value), so DOMAIN\host and a
// trailing dot are fine there; so are names storage keeps as written.
func TestWorker_NamesStorageKeepsAreAccepted(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	for _, args := range [][]string{
		{conn, `--identity=DOMAIN\host`},
		{conn, "--identity=host.example."},
		{conn, "--shards=4", "--identity=DOMAIN.host-1"},
		{conn, "--shards=4", "--blob=pools/eu.west/leader", "--identity=ns/host-1"},
		{conn, "--shards=4", "--blob=" + strings.Repeat("b", 900), "--identity=" + strings.Repeat("i", 108)},
	} {
		if _, err := parseOptions(args, new(strings.Builder)); err != nil {
			t.Errorf("parseOptions(%q) = %v, want accepted", args[1:], err)
		}
	}
}
