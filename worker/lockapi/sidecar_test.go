package lockapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
)

// What Dapr's SDKs ask before their first call, with the token rules of
// the lock paths: the metadata needs the token, Dapr's health probes and
// ours do not.
func TestAPI_SidecarSurfaceTheSDKsProbe(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "s3cret")
	tok := []string{"dapr-api-token", "s3cret"}
	for _, tc := range []struct {
		path   string
		header []string
		code   int
		body   string
	}{
		{"/v1.0/metadata", nil, 401, "invalid api token"},
		{"/v1.0/healthz", nil, 204, ""},
		{"/v1.0/healthz/outbound", nil, 204, ""},
		{"/healthz", nil, 200, "ok"},
		{"/readyz", nil, 200, "ready"},
		{"/v1.0/metadata", tok, 200, `{"id":"blobleader-locks","runtimeVersion":"blobleader `},
	} {
		code, body := call(t, srv, "GET", tc.path, "", tc.header...)
		if code != tc.code || !strings.HasPrefix(body, tc.body) {
			t.Fatalf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	_, body := call(t, srv, "GET", "/v1.0/metadata", "", tok...)
	var md struct {
		Components []struct{ Name, Type, Version string } `json:"components"`
	}
	if err := json.Unmarshal([]byte(body), &md); err != nil || len(md.Components) != 1 ||
		md.Components[0] != (struct{ Name, Type, Version string }{"lockstore", lockapi.ComponentType, lockapi.ComponentVersion}) {
		t.Fatalf("metadata = %s (%v): want the lock store as the one component", body, err)
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
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

// Storage that refuses every request (a wrong account key): the lock
// answers 500 naming the operation and status, /readyz says not ready and
// why, /healthz stays 200 (a restart would not cure it), the failure is
// logged as the worker's storage_error line — once, then counted — and
// the metrics count it.
func TestAPI_StorageFailureIsLoggedAndMakesItNotReady(t *testing.T) {
	t.Parallel()
	wrongKey := regexp.MustCompile(`AccountKey=[^;]+`).ReplaceAllString(server.ConnectionString(), "AccountKey=d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
	metrics := lockapi.NewMetrics()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: wrongKey, Container: freshContainer(),
		RequestTimeout: 2 * time.Second, Observe: metrics.ObserveStorage})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mutex.DefaultConfig("lockapi-test")
	l, err := mutex.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	api := lockapi.New(l, lockapi.Config{Store: "lockstore", MaxWait: 30 * time.Second, Metrics: metrics,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, cfg.JitteredRetryPeriod)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	for range 3 {
		code, body := call(t, srv, "POST", lockPath, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":15}`)
		if code != 500 || !strings.HasPrefix(body, `{"errorCode":"ERR_TRY_LOCK","message":"failed to try acquiring lock: poll: 403 `) {
			t.Fatalf("lock with storage refusing = %d %s", code, body)
		}
	}
	if code, body := call(t, srv, "GET", "/readyz", ""); code != 503 || !strings.HasPrefix(body, "not ready: storage: poll: 403 ") {
		t.Fatalf("/readyz = %d %q, want 503 naming the refusal", code, body)
	}
	if code, _ := call(t, srv, "GET", "/healthz", ""); code != 200 {
		t.Fatalf("/healthz = %d, want 200: a restart does not cure storage", code)
	}
	var lines []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(ln), &m) == nil && m["event"] == "storage_error" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 1 || lines[0]["op"] != "poll" || lines[0]["status"] != float64(403) || lines[0]["code"] == "" ||
		lines[0]["repeated"] != float64(0) || lines[0]["level"] != "WARN" || lines[0]["message"] == nil {
		t.Fatalf("storage_error lines = %v, want one (then rate-limited) naming op poll, status 403, its code and message; log:\n%s", lines, logs.String())
	}
	if strings.Contains(logs.String(), "AccountKey") || strings.Contains(logs.String(), "sig=") {
		t.Fatal("a log line carries a secret")
	}
	_, scrape := call(t, srv, "GET", "/metrics", "")
	for _, want := range []string{
		`blobleader_storage_requests_total{code="403",op="poll"}`,
		`blobleader_locks_requests_total{method="lock",outcome="error",protocol="http"} 3`,
		`blobleader_locks_ready 0`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
