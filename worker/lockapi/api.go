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
	// Token, when not empty, must come with every request as
	// "Authorization: Bearer <token>" or Dapr's "dapr-api-token: <token>".
	Token string
	// MaxWait bounds a lock request's waitSeconds.
	MaxWait time.Duration
	// Logger receives one line per grant, renew and unlock; it must not
	// block (the binary's is bounded). nil: slog.Default().
	Logger *slog.Logger
}

// Server is the HTTP API over one Locker.
type Server struct {
	l   *mutex.Locker
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	// retry is how long a waiting lock request sleeps between attempts.
	retry func() time.Duration
	// now is the clock a lock request's arrival and grant are read on.
	now func() time.Time
}

// New returns the API over l. retry is the poll period of a waiting lock
// request (the Locker's jittered RetryPeriod).
func New(l *mutex.Locker, cfg Config, retry func() time.Duration) *Server {
	s := &Server{l: l, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), retry: retry, now: time.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	// Dapr serves v1.0-alpha1; its API reference's curl examples say
	// v1.0-alpha, which is served too so that they work unchanged.
	for _, v := range []string{"v1.0-alpha1", "v1.0-alpha"} {
		s.mux.HandleFunc("POST /"+v+"/lock/{store}", s.lock)
		s.mux.HandleFunc("GET /"+v+"/lock/{store}", s.read)
		s.mux.HandleFunc("POST /"+v+"/unlock/{store}", s.unlock)
		s.mux.HandleFunc("POST /"+v+"/renew/{store}", s.renew)
	}
	return s
}

// ServeHTTP checks the token, then serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token != "" && !s.authorized(r) {
		http.Error(w, "invalid api token", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

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

// apiError is Dapr's error body: {"errorCode","message"}.
type apiError struct {
	status  int
	Code    string `json:"errorCode"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

func malformed(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "ERR_MALFORMED_REQUEST", fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) { writeJSON(w, e.status, e) }
