package lockapi

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blobleader/blobleader/worker/mutex"
)

// Bounds on a lock request.
const (
	// MinExpiry and MaxExpiry bound expiryInSeconds: the lease storage
	// grants is the expiry itself, and Azure grants 15–60 s. Nothing renews
	// in the background: a replica that died would leave a client believing
	// in a lock no lease backs. Longer holdings renew explicitly.
	MinExpiry = 15
	MaxExpiry = 60
)

// Config is the service's configuration.
type Config struct {
	// Store is the name {store} in every path must match (the one
	// configured store; it maps to the Locker's container).
	Store string
	// Token, when not empty, must come with every request but the probes
	// and /metrics: HTTP "Authorization: Bearer <token>" or Dapr's
	// "dapr-api-token: <token>" header, gRPC the same as metadata.
	Token string
	// MaxWait bounds a lock request's waitSeconds.
	MaxWait time.Duration
	// Logger receives one line per grant, renew and unlock, and the
	// rate-limited storage_error lines; it must not block (the binary's is
	// bounded). nil: slog.Default().
	Logger *slog.Logger
	// Metrics, when not nil, are the metrics served on /metrics (the binary
	// builds them first, to count its storage client's requests); nil: new
	// ones.
	Metrics *Metrics
}

// Server is the lock service over one Locker: Dapr's lock API over HTTP and
// gRPC (h2c on the same handler), Dapr's sidecar probes, /readyz, /metrics.
type Server struct {
	l       *mutex.Locker
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *Metrics
	storage *storageAnswers
	// readiness is the last storage probe (/readyz, blobleader_locks_ready).
	readiness readiness
	// retry is how long a waiting lock request sleeps between attempts.
	retry func() time.Duration
	// now is the clock a lock request's arrival and grant are read on.
	now func() time.Time
}

// New returns the API over l. retry is the poll period of a waiting lock
// request (the Locker's jittered RetryPeriod).
func New(l *mutex.Locker, cfg Config, retry func() time.Duration) *Server {
	s := &Server{l: l, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: cfg.Metrics, retry: retry, now: time.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	s.storage = newStorageAnswers(s.log)
	s.metrics.Registry.MustRegister(s.readyGauge())
	// Dapr serves v1.0-alpha1; its API reference's curl examples say
	// v1.0-alpha, which is served too so that they work unchanged.
	for _, v := range []string{"v1.0-alpha1", "v1.0-alpha"} {
		s.mux.HandleFunc("POST /"+v+"/lock/{store}", s.lock)
		s.mux.HandleFunc("GET /"+v+"/lock/{store}", s.read)
		s.mux.HandleFunc("POST /"+v+"/unlock/{store}", s.unlock)
		s.mux.HandleFunc("POST /"+v+"/renew/{store}", s.renew)
	}
	s.mux.HandleFunc("GET /v1.0/metadata", s.metadataHTTP)
	for _, p := range openPaths {
		s.mux.HandleFunc("GET "+p, s.probe(p))
	}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	return s
}

// openPaths answer without a token: the probes, as Dapr's healthz, and the
// metrics, which carry no id, owner or secret.
var openPaths = []string{"/healthz", "/readyz", "/v1.0/healthz", "/v1.0/healthz/outbound"}

// ServeHTTP serves gRPC calls (HTTP/2, content-type application/grpc) and
// the HTTP API, checking the token first.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isGRPC(r) {
		s.serveGRPC(w, r)
		return
	}
	if s.cfg.Token != "" && !s.open(r) && !s.authorized(r) {
		http.Error(w, "invalid api token", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) open(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, p := range append(openPaths, "/metrics") {
		if r.URL.Path == p {
			return true
		}
	}
	return false
}

// authorized reports whether r carries the token: Dapr's dapr-api-token
// header (gRPC metadata arrives as headers too) or a bearer token.
func (s *Server) authorized(r *http.Request) bool {
	got := r.Header.Get("dapr-api-token")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = b
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// leaseNamespace roots the derived lease IDs (a name-based UUID, RFC 9562).
var leaseNamespace = uuid.MustParse("0b1ab1ea-d0c5-4c3e-9a5e-6c0c4b1e0001")

// LeaseID is the lease ID of lockOwner's holdings of resourceID in store:
// a name-based (SHA-1) UUID of the three, each length-prefixed so that no
// two triples share an input. Every replica derives the same.
func LeaseID(store, resourceID, lockOwner string) string {
	var b strings.Builder
	for _, p := range []string{store, resourceID, lockOwner} {
		fmt.Fprintf(&b, "%d:%s", len(p), p)
	}
	return uuid.NewSHA1(leaseNamespace, []byte(b.String())).String()
}

// apiError is Dapr's error body: {"errorCode","message"}, with the HTTP
// status it is answered with (a gRPC call gets the matching status code).
type apiError struct {
	status  int
	Code    string `json:"errorCode"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

func malformed(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "ERR_MALFORMED_REQUEST", fmt.Sprintf(format, args...)}
}

func storeNotFound(store string) *apiError {
	return &apiError{http.StatusBadRequest, "ERR_LOCK_STORE_NOT_FOUND", fmt.Sprintf("lock store %s not found", store)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) { writeJSON(w, e.status, e) }
