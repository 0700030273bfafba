package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
)

// inProcess runs the binary's run in this process and returns the exit code
// and what it wrote. Env twins that would change the outcome are cleared.
func inProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	var out, errw bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("run %v panicked: %v\nstderr:\n%s", args, p, errw.String())
		}
	}()
	code = run(args, &out, &errw)
	return code, out.String(), errw.String()
}

// requireOneLineUsage asserts exit 2 with one line on stderr naming each of
// want (the flag or variable, and the cause) and nothing on stdout.
func requireOneLineUsage(t *testing.T, code int, stdout, stderr string, want ...string) {
	t.Helper()
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if stdout != "" {
		t.Fatalf("stdout not empty on a start-up error:\n%s", stdout)
	}
	if lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n"); len(lines) != 1 {
		t.Fatalf("want one line on stderr, got %d:\n%s", len(lines), stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Fatalf("stderr does not say %q:\n%s", w, stderr)
		}
	}
}

// Every error of start-up — the listen address, the credential, the
// clients, the lock, the history sink — prints one line naming the flag and
// the cause and exits 2, in the worker and in run; none panics.
func TestStartup_ErrorsPrintOneLineNamingTheFlagAndExitTwo(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	conn := "--connection-string=" + goodConn
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"listen on a busy port", nil, []string{conn, "--listen", busy.Addr().String()}, []string{"--listen", busy.Addr().String(), "address already in use"}},
		{"listen without a host", nil, []string{conn, "--listen", "18081"}, []string{"--listen", `"18081"`, "host:port"}},
		{"listen without a port", nil, []string{conn, "--listen", "localhost"}, []string{"--listen", `"localhost"`, "host:port"}},
		{"a credential that cannot be built", map[string]string{"AZURE_TOKEN_CREDENTIALS": "NoSuchCredential"},
			[]string{"--account-url", "https://acct.blob.core.windows.net", "--listen", "127.0.0.1:0"}, []string{"--account-url", "AZURE_TOKEN_CREDENTIALS"}},
		{"control endpoint on a busy port", nil, []string{conn, "--listen", "127.0.0.1:0", "--control-listen", busy.Addr().String()},
			[]string{"--control-listen", "address already in use"}},
	}
	for _, mode := range []string{"worker", "run"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				for k, v := range tc.env {
					t.Setenv(k, v)
				}
				args := tc.args
				if mode == "run" {
					args = append(append([]string{"run"}, args...), "--", "true")
				}
				code, stdout, stderr := inProcess(t, args...)
				requireOneLineUsage(t, code, stdout, stderr, tc.want...)
			})
		}
	}
}

// The paths validation keeps the command line from reaching (a client or
// lock the options cannot build) still end in an error naming the flag,
// never a panic, and leave nothing open.
func TestStartup_OpenNodeFailuresNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"lock", func(o *options) { o.blob = "" }, "--blob"},
		{"client", func(o *options) { o.storageDial = "no port" }, "--storage-dial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AZURE_TOKEN_CREDENTIALS", "NoSuchCredential")
			o, err := parseOptions([]string{"--connection-string=" + goodConn, "--listen=127.0.0.1:0"}, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&o.options)
			var stderr bytes.Buffer
			n, err := openNode(&o.options, o.electionConfig(), &stderr, o.buildMode)
			if n != nil {
				n.close()
				t.Fatalf("openNode succeeded with a broken %s", tc.want)
			}
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("openNode: %v, want a usage error naming %s", err, tc.want)
			}
		})
	}
}
