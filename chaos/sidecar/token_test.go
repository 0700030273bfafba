package sidecar

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// slowIMDS stands for ACI's managed-identity endpoint, which is known to
// answer slowly: every token takes delay to arrive (honouring the caller's
// context) and lives for lifetime, so the SDK has to fetch again and again.
type slowIMDS struct {
	delay, lifetime time.Duration

	mu    sync.Mutex
	calls int
	got   int
}

func (s *slowIMDS) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	select {
	case <-ctx.Done():
		return azcore.AccessToken{}, ctx.Err()
	case <-time.After(s.delay):
	}
	if len(opts.Scopes) != 1 || opts.Scopes[0] != storageScope {
		return azcore.AccessToken{}, io.ErrUnexpectedEOF
	}
	s.mu.Lock()
	s.got++
	s.mu.Unlock()
	return azcore.AccessToken{Token: "imds-token", ExpiresOn: time.Now().Add(s.lifetime)}, nil
}

// fakeBlobs is just enough of the blob data plane over TLS for the control
// blobs: GET (404 when absent) and PUT of block blobs, bearer token only.
type fakeBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
	puts  int
}

func (f *fakeBlobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer imds-token" {
		w.Header().Set("x-ms-error-code", "InvalidAuthenticationInfo")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		b, ok := f.blobs[r.URL.Path]
		if !ok {
			w.Header().Set("x-ms-error-code", "BlobNotFound")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("ETag", `"1"`)
		w.Write(b)
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		f.blobs[r.URL.Path] = b
		f.puts++
		w.Header().Set("ETag", `"1"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (f *fakeBlobs) putCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// On ACI the first managed-identity token is known to take longer than the
// sidecar's 0.5 s poll, and every storage try runs its token fetch inside the
// try's timeout. The sidecar must wait for a first token with a generous
// budget and give each try several seconds, so it works with a slow token
// endpoint: here every token takes 800 ms and lives 1 s, with a 200 ms poll.
func TestOffline_SidecarWorksWithASlowManagedIdentityEndpoint(t *testing.T) {
	blobs := &fakeBlobs{blobs: map[string][]byte{}}
	srv := httptest.NewTLSServer(blobs)
	defer srv.Close()
	imds := &slowIMDS{delay: 800 * time.Millisecond, lifetime: time.Second}
	cfg, err := ParseConfig([]string{"--name", "ci-w-01", "--account-url", srv.URL, "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--poll", "200ms", "--worker-status="},
		func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := start(ctx, cfg, imds, srv.Client(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start with a slow token endpoint: %v", err)
	}
	defer sc.Proxy.Close()
	runCtx, stop := context.WithTimeout(ctx, 6*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- sc.Run(runCtx) }()
	<-runCtx.Done()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// About one state per poll and per token refresh; well over three in 6 s
	// unless tokens never arrive in time.
	if n := blobs.putCount(); n < 3 {
		imds.mu.Lock()
		defer imds.mu.Unlock()
		t.Fatalf("the sidecar wrote its state %d times in 6 s (token requests %d, tokens delivered %d): with a slow token endpoint it cannot reach its control blobs", n, imds.calls, imds.got)
	}
	if st, ok := blobs.blobs["/chaos/"+StateBlob("ci-w-01")]; !ok || !strings.Contains(string(st), `"name":"ci-w-01"`) {
		t.Fatalf("no state blob for ci-w-01: %q", st)
	}
}

// A token endpoint that never answers within the budget stops the start with
// an error naming the budget, instead of a sidecar that silently never works.
func TestOffline_SidecarStartGivesUpAfterTheTokenBudget(t *testing.T) {
	imds := &slowIMDS{delay: time.Hour, lifetime: time.Hour}
	took, err := AwaitToken(context.Background(), imds, 300*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "300ms") {
		t.Fatalf("AwaitToken = %v after %v, want an error naming the 300ms budget", err, took)
	}
	if took > 5*time.Second {
		t.Fatalf("AwaitToken took %v for a 300ms budget", took)
	}
	fast := &slowIMDS{delay: 10 * time.Millisecond, lifetime: time.Hour}
	if _, err := AwaitToken(context.Background(), fast, time.Second, nil); err != nil {
		t.Fatal(err)
	}
}
