package main

import (
	"strings"
	"testing"
)

// Each flag's own value rules are judged before the requirement that
// storage be configured: with no storage set, a broken flag is refused
// under its own name, not as "no storage"; and "no storage" is still
// reported when every value is fine.
func TestFlags_AFlagsOwnRuleComesBeforeNoStorage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"worker: shards", []string{"--shards", "2000"}, []string{"invalid --shards 2000"}},
		{"worker: tick", []string{"--tick", "5ms"}, []string{"invalid --tick 5ms"}},
		{"worker: log format", []string{"--log-format", "xml"}, []string{`invalid --log-format "xml"`}},
		{"worker: listen", []string{"--listen", "nope"}, []string{`invalid --listen "nope"`}},
		{"worker: control listen", []string{"--control-listen", "0.0.0.0:1"}, []string{`invalid --control-listen "0.0.0.0:1"`}},
		{"run: kill grace", []string{"run", "--kill-grace", "5s", "--", "/bin/true"}, []string{"invalid --kill-grace 5s"}},
		{"locks: max wait", []string{"locks", "--max-wait", "99s"}, []string{"invalid --max-wait 1m39s"}},
		{"locks: listen off loopback", []string{"locks", "--listen", ":3500"}, []string{`invalid --listen ":3500"`, "bearer token"}},
		{"ledger: timeout", []string{"ledger", "--timeout", "0s"}, []string{"invalid --timeout 0s"}},
		{"worker: every value fine", nil, []string{"no storage"}},
		{"run: every value fine", []string{"run", "--", "/bin/true"}, []string{"no storage"}},
		{"locks: every value fine", []string{"locks"}, []string{"no storage"}},
		{"ledger: every value fine", []string{"ledger"}, []string{"no storage"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.args...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want...)
			if !strings.Contains(strings.Join(tc.want, " "), "no storage") && strings.Contains(stderr, "no storage") {
				t.Fatalf("refused as no storage, not by the flag's own rule:\n%s", stderr)
			}
		})
	}
}

// blobleader status --url must be an absolute http(s) URL with a host,
// judged at parse time: exit 2 naming --url (or its twin), never exit 1
// from the request ("unsupported protocol scheme").
func TestFlags_StatusURLMustBeAnAbsoluteHTTPURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"empty", nil, []string{"status", "--url", ""}, []string{`invalid --url ""`, "http://"}},
		{"no scheme", nil, []string{"status", "--url", "127.0.0.1:8080"}, []string{`invalid --url "127.0.0.1:8080"`}},
		{"another scheme", nil, []string{"status", "--url", "ftp://host:21"}, []string{`invalid --url "ftp://host:21"`}},
		{"no host", nil, []string{"status", "--url", "http://"}, []string{`invalid --url "http://"`}},
		{"relative", nil, []string{"status", "--url", "/status"}, []string{`invalid --url "/status"`}},
		{"from the env twin", []string{"BLOBLEADER_URL="}, []string{"status"}, []string{`invalid BLOBLEADER_URL (--url) ""`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, tc.env, tc.args...)
			requireOneLineUsage(t, code, stdout, stderr, tc.want...)
		})
	}
}

// blobleader lock opens no listener unless --listen or BLOBLEADER_LISTEN
// asks for one, so its --help shows no default address for --listen.
func TestLock_HelpShowsNoDefaultListen(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runBinary(t, nil, "lock", "--help")
	if code != 0 {
		t.Fatalf("lock --help: exit %d\n%s", code, stderr)
	}
	_, block, found := strings.Cut(stdout, "  --listen\n")
	if !found {
		t.Fatalf("lock --help does not list --listen:\n%s", stdout)
	}
	block, _, _ = strings.Cut(block, "\n  --")
	if strings.Contains(block, "(default") {
		t.Fatalf("lock --help gives --listen a default, though lock listens only when asked:\n  --listen\n%s", block)
	}
	if !strings.Contains(block, "BLOBLEADER_LISTEN") {
		t.Fatalf("lock --help's --listen does not name its twin:\n%s", block)
	}
}
