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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A term write that storage refuses definitely (a 4xx other than lease
// loss) must not loop silently: the worker says so on /healthz and /readyz.
// The fault is injected by a proxy in front of Azurite that answers every
// metadata write with 403 (what storage answers a metadata value it cannot
// carry).
func TestWorker_RejectedTermWriteSurfacesInHealthAndReady(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	proxy, refused := metadataRefusingProxy(t, az.ConnectionString(), "AuthorizationFailure")

	cmd := exec.Command(binary, "--identity", "refused", "--listen", anyPort,
		"--container", "refused", "--storage-dial", strings.TrimPrefix(proxy.URL, "http://"), "--log-format", "json")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString())
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := startedURL(t, "worker refused", stderr.String)
	awaitServing(t, base)

	var hbody, rbody string
	waitFor(t, "/healthz and /readyz both 503 after refused metadata writes", 15*time.Second, func() (bool, string) {
		var hc, rc int
		hc, hbody = probeURL(t, base+"/healthz")
		rc, rbody = probeURL(t, base+"/readyz")
		return hc == http.StatusServiceUnavailable && rc == http.StatusServiceUnavailable,
			fmt.Sprintf("after %d refused metadata writes: /healthz %d %q, /readyz %d %q", refused.Load(), hc, hbody, rc, rbody)
	})
	for _, body := range []string{hbody, rbody} {
		if !strings.Contains(body, "term write") {
			t.Fatalf("probe body does not say the term write is refused: %q", body)
		}
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

// /status says when the leader it names was last confirmed: a leader its
// last renew, a follower the last read of the lock's record that named it,
// which moves on as the follower reads again.
func TestWorker_StatusSaysWhenTheLeaderWasLastConfirmed(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	w1 := startCaptured(t, "w1", az.ConnectionString(), "--container", "confirmed", "--retry-period", "500ms")
	awaitRole(t, w1.base, "leader")
	w2 := startCaptured(t, "w2", az.ConnectionString(), "--container", "confirmed", "--retry-period", "500ms")
	await(t, 10*time.Second, "w2 sees w1 lead", func() bool { return getStatus(t, w2.base)["leader"] == "w1" })
	confirmed := func(base string) time.Time {
		t.Helper()
		st := getStatus(t, base)
		s, ok := st["leader_confirmed_at"].(string)
		if !ok {
			t.Fatalf("%s /status has no leader_confirmed_at: %v", base, st)
		}
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("leader_confirmed_at %q: %v", s, err)
		}
		if at.After(time.Now()) {
			t.Fatalf("leader_confirmed_at %s is in the future", at)
		}
		return at
	}
	// The leader renews every 2 s: its confirmation is never older than
	// the renew deadline (10 s) while it leads — a leader past it steps
	// down, however busy the machine, so this takes no stall.
	if at := confirmed(w1.base); time.Since(at) > 10*time.Second {
		t.Fatalf("the leader's leader_confirmed_at is %v old", time.Since(at))
	}
	first := confirmed(w2.base)
	await(t, 15*time.Second, "the follower's confirmation moves on", func() bool { return confirmed(w2.base).After(first) })
	// No leader known: no confirmation.
	stopProc(t, w1)
	stopProc(t, w2)
}
