package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
)

// expectUsageError runs the binary and asserts exit 2 with a one-line
// message naming want.
func expectUsageError(t *testing.T, env []string, want string, args ...string) string {
	t.Helper()
	// If the check is missing, the worker would start: keep it off well-known ports.
	args = append(args, "--listen=127.0.0.1:0")
	code, out := runWorkerCmd(t, append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, env...), args...)
	if code != 2 {
		t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 {
		t.Fatalf("want a one-line message, got %d lines:\n%s", len(lines), out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("message does not name %s:\n%s", want, out)
	}
	return out
}

// An identity is written to the lock blob's metadata, an HTTP header: one
// that storage cannot carry made a worker that acquired, failed the term
// write, released and polled for ever. It is a configuration error.
func TestWorker_IdentityStorageCannotCarryExitsTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		env  []string
		args []string
		rule string // a word of the rule the message must state
	}{
		{"non-ASCII", nil, []string{conn, "--identity", "wörker-ü"}, "ASCII"},
		{"non-ASCII from the env twin", []string{"BLOBLEADER_IDENTITY=wörker-ü"}, []string{conn}, "ASCII"},
		{"trailing space", nil, []string{conn, "--identity", "w1 "}, "space"},
		{"control character", nil, []string{conn, "--identity", "w1\x01"}, "ASCII"},
		{"longer than the bound", nil, []string{conn, "--identity", strings.Repeat("w", election.MaxIdentityLength+1)}, fmt.Sprint(election.MaxIdentityLength)},
		{"beyond Azure's 8 KiB of metadata", nil, []string{conn, "--identity", strings.Repeat("w", 9000)}, "8 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := expectUsageError(t, tt.env, "--identity", tt.args...)
			if !strings.Contains(out, tt.rule) {
				t.Fatalf("message does not state the rule (%q):\n%s", tt.rule, out)
			}
		})
	}
}

// An unusable --history file path is a configuration error (exit 2 naming
// the flag), found before the worker touches storage, and leaves nothing
// behind.
func TestWorker_UnusableHistoryPathExitsTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
	}{
		{"directory missing", filepath.Join(dir, "missing", "h.jsonl")},
		{"is a directory", dir},
		{"parent is a file", filepath.Join(regular, "h.jsonl")},
	}
	if ro := readOnlyDir(t); ro != "" {
		tests = append(tests, struct{ name, path string }{"directory not writable", filepath.Join(ro, "h.jsonl")})
	} else {
		t.Log("no way to make a directory unwritable here (root without chattr): the not-writable case is not run")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectUsageError(t, nil, "--history", conn, "--history", tt.path)
			if _, err := os.Lstat(tt.path); err == nil && tt.path != dir {
				t.Fatalf("%s exists after a refused start: something was half-written", tt.path)
			}
		})
	}
	if b, err := os.ReadFile(regular); err != nil || string(b) != "keep\n" {
		t.Fatalf("%s changed: %q, %v", regular, b, err)
	}
}

// readOnlyDir returns a directory this process cannot create files in, or ""
// if it has no way to make one (root ignores modes; chattr +i stops root).
func readOnlyDir(t *testing.T) string {
	t.Helper()
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := exec.Command("chattr", "+i", ro).Run(); err != nil {
			return ""
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", ro).Run() })
	}
	probe := filepath.Join(ro, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err == nil {
		_ = os.Remove(probe)
		return ""
	}
	return ro
}

// The rule is not stricter than it needs to be in the other direction
// either: the longest identity it accepts, of every printable ASCII
// character with runs of inner spaces, makes a leader that a follower names
// exactly (it round-trips through the lock's metadata on Azurite).
func TestWorker_IdentityAtTheEdgeOfTheRuleRoundTrips(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		b.WriteByte(c)
		if c%17 == 0 {
			b.WriteString("   ")
		}
	}
	id := b.String()
	for len(id) < election.MaxIdentityLength {
		id += b.String()
	}
	id = id[:election.MaxIdentityLength-1] + "z" // no trailing space
	az := azuritetest.StartT(t)
	dir := t.TempDir()
	leaderURL, _ := startWorker(t, az.ConnectionString(), id, filepath.Join(dir, "a.jsonl"))
	awaitRole(t, leaderURL, "leader")
	if st := getStatus(t, leaderURL); st["identity"] != id {
		t.Fatalf("/status identity = %q, want %q", st["identity"], id)
	}
	followerURL, _ := startWorker(t, az.ConnectionString(), "edge-follower", filepath.Join(dir, "b.jsonl"))
	deadline := time.Now().Add(10 * time.Second)
	for st := getStatus(t, followerURL); st["leader"] != id; st = getStatus(t, followerURL) {
		if time.Now().After(deadline) {
			t.Fatalf("follower names leader %q, want the %d-byte identity %q", st["leader"], len(id), id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A term write that storage refuses definitely (a 4xx other than lease
// loss) must not loop silently: the worker says so on /healthz and /readyz.
// The fault is injected by a proxy in front of Azurite that answers every
// metadata write with 403 (what a non-ASCII identity used to get).
func TestWorker_RejectedTermWriteSurfacesInHealthAndReady(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	proxy, refused := metadataRefusingProxy(t, az.ConnectionString(), "AuthorizationFailure")

	port, err := azuritetest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--identity", "refused", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--container", "refused", "--storage-dial", strings.TrimPrefix(proxy.URL, "http://"), "--log-format", "json")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	awaitServing(t, base)

	deadline := time.Now().Add(15 * time.Second)
	for {
		hc, hbody := probeURL(t, base+"/healthz")
		rc, rbody := probeURL(t, base+"/readyz")
		if hc == http.StatusServiceUnavailable && rc == http.StatusServiceUnavailable {
			for _, body := range []string{hbody, rbody} {
				if !strings.Contains(body, "term write") {
					t.Fatalf("probe body does not say the term write is refused: %q", body)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d refused metadata writes: /healthz %d %q, /readyz %d %q; want both 503 naming the term write",
				refused.Load(), hc, hbody, rc, rbody)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if refused.Load() == 0 {
		t.Fatal("the proxy refused no metadata write: the fault never hit")
	}
	if st := getStatus(t, base); st["role"] != "follower" {
		t.Fatalf("/status role %v, want follower (no leadership without a term)", st["role"])
	}
}

func probeURL(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// blobEndpoint is the BlobEndpoint of a connection string.
func blobEndpoint(t *testing.T, conn string) string {
	t.Helper()
	for _, part := range strings.Split(conn, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(k, "BlobEndpoint") {
			return v
		}
	}
	t.Fatalf("no BlobEndpoint in %q", conn)
	return ""
}

// metadataRefusingProxy is a proxy in front of the Azurite of connString that
// answers every metadata write (the term write) with 403 and the given
// error code, as storage does without the role assignment, and forwards
// everything else. refused counts the writes it refused.
func metadataRefusingProxy(t *testing.T, connString, code string) (proxy *httptest.Server, refused *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(blobEndpoint(t, connString))
	if err != nil {
		t.Fatal(err)
	}
	refused = new(atomic.Int64)
	forward := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Get("comp") == "metadata" {
			refused.Add(1)
			w.Header().Set("x-ms-error-code", code)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>`+code+`</Code><Message>injected</Message></Error>`)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy, refused
}
