package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// coldTokenEndpoint stands for ACI's managed-identity endpoint, which is
// known to answer slowly at first: until it has delivered one token, every
// answer takes delay; afterwards it answers at once. A caller that gives up
// before delay never gets a token, however often it asks. It speaks the
// App Service protocol (IDENTITY_ENDPOINT, IDENTITY_HEADER), which the real
// azidentity ManagedIdentityCredential uses when those variables are set.
type coldTokenEndpoint struct {
	delay time.Duration

	mu        sync.Mutex
	delivered int
	asked     int
}

func (e *coldTokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.asked++
	cold := e.delivered == 0
	e.mu.Unlock()
	if r.Header.Get("X-IDENTITY-HEADER") != "secret-header" || r.URL.Query().Get("client_id") != "client-1" {
		http.Error(w, "bad identity request", http.StatusBadRequest)
		return
	}
	if cold {
		select {
		case <-r.Context().Done():
			return // the caller gave up: nothing delivered
		case <-time.After(e.delay):
		}
	}
	e.mu.Lock()
	e.delivered++
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": "mi-token", "expires_in": 3600, "token_type": "Bearer",
		"resource": r.URL.Query().Get("resource"), "client_id": "client-1",
	})
}

// TestWorker_FirstManagedIdentityTokenSlowerThanARequest: the worker's storage
// requests are bounded by 2 s (min(renew interval, D/3)), and the SDK fetches
// a token inside that bound. With a managed-identity endpoint that takes 3 s
// to deliver its first token, storage must still see the token: the worker
// gets the first one at start-up under its own budget (--token-timeout),
// saying so in its log, and every request after that uses the cached token.
func TestWorker_FirstManagedIdentityTokenSlowerThanARequest(t *testing.T) {
	t.Parallel()
	tokens := &coldTokenEndpoint{delay: 3 * time.Second}
	ts := httptest.NewServer(tokens)
	defer ts.Close()

	var mu sync.Mutex
	var authorized, total int
	blobs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		total++
		if r.Header.Get("Authorization") == "Bearer mi-token" {
			authorized++
		}
		mu.Unlock()
		// Busy storage: the worker keeps contending, nothing more is needed.
		w.Header().Set("x-ms-error-code", "ServerBusy")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer blobs.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: blobs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(binary, "--account-url", blobs.URL, "--identity", "w-mi",
		"--listen", anyPort, "--log-format", "json")
	cmd.Env = append(os.Environ(),
		"AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential", "AZURE_CLIENT_ID=client-1",
		"IDENTITY_ENDPOINT="+ts.URL+"/msi/token", "IDENTITY_HEADER=secret-header",
		"SSL_CERT_FILE="+ca, "SSL_CERT_DIR="+t.TempDir())
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	// While it waits for the token, the liveness probe's /healthz answers
	// 200 (ACI would otherwise restart it mid-wait) and /readyz does not.
	health := startedURL(t, "worker w-mi", logs.String)
	var healthz, delivered int
	waitFor(t, "/healthz answering", 10*time.Second, func() (bool, string) {
		resp, err := http.Get(health + "/healthz")
		if err != nil {
			return false, fmt.Sprintf("%v; log:\n%s", err, logs.String())
		}
		resp.Body.Close()
		tokens.mu.Lock()
		delivered = tokens.delivered
		tokens.mu.Unlock()
		healthz = resp.StatusCode
		return true, ""
	})
	if delivered == 0 && healthz != http.StatusOK {
		t.Errorf("/healthz = %d while waiting for the first token, want 200", healthz)
	}
	if ready, err := http.Get(health + "/readyz"); err == nil {
		ready.Body.Close()
		if ready.StatusCode == http.StatusOK {
			t.Errorf("/readyz = 200 before any storage answer")
		}
	}

	waitFor(t, "a storage request carrying the managed identity's token", 20*time.Second, func() (bool, string) {
		mu.Lock()
		a, n := authorized, total
		mu.Unlock()
		tokens.mu.Lock()
		asked, got := tokens.asked, tokens.delivered
		tokens.mu.Unlock()
		return a > 0, fmt.Sprintf("%d requests reached storage; the token endpoint was asked %d times and delivered %d tokens; worker log:\n%s",
			n, asked, got, logs.String())
	})
	out := logs.String()
	for _, want := range []string{"waiting for the first storage token", "first storage token acquired"} {
		if !strings.Contains(out, want) {
			t.Errorf("the worker's log does not say %q:\n%s", want, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a child's stdout and stderr at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
