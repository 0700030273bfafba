package lockapi

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blobleader/blobleader/worker/lockapi/daprpb"
)

// What Dapr's SDKs ask a sidecar before their first call, and the probes:
// GET /v1.0/metadata (the JS SDK polls it over HTTP, and GetMetadata over
// gRPC, until it answers), /v1.0/healthz and /v1.0/healthz/outbound (the
// Python SDK polls the latter), /healthz (the process answers) and /readyz
// (storage answers).

// Component is how the metadata answer names the one lock store: its type
// and version, as a Dapr component's.
const (
	ComponentType    = "lock.blobleader"
	ComponentVersion = "v1"
	// AppID is the metadata answer's id (a sidecar's app ID; the service
	// has none of its own).
	AppID = "blobleader-locks"
)

// runtimeVersion names this build in the metadata answer.
func runtimeVersion() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return "blobleader " + v
}

// metadata is Dapr's GetMetadataResponse for this service: the app ID, the
// runtime version and the lock store as a registered component.
func (s *Server) metadata() *daprpb.GetMetadataResponse {
	return &daprpb.GetMetadataResponse{
		Id:             AppID,
		RuntimeVersion: runtimeVersion(),
		RegisteredComponents: []*daprpb.RegisteredComponents{
			{Name: s.cfg.Store, Type: ComponentType, Version: ComponentVersion},
		},
	}
}

// metadataHTTP: GET /v1.0/metadata → 200 {"id", "runtimeVersion",
// "components": [{"name", "type", "version"}]}, Dapr's field names.
func (s *Server) metadataHTTP(w http.ResponseWriter, r *http.Request) {
	done := s.metrics.begin(protoHTTP, "metadata")
	m := s.metadata()
	type component struct {
		Name    string `json:"name"`
		Type    string `json:"type"`
		Version string `json:"version"`
	}
	body := struct {
		ID             string      `json:"id"`
		RuntimeVersion string      `json:"runtimeVersion"`
		Components     []component `json:"components"`
	}{ID: m.GetId(), RuntimeVersion: m.GetRuntimeVersion()}
	for _, c := range m.GetRegisteredComponents() {
		body.Components = append(body.Components, component{c.GetName(), c.GetType(), c.GetVersion()})
	}
	done("ok")
	writeJSON(w, http.StatusOK, body)
}

// probe answers one of the open paths.
func (s *Server) probe(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch path {
		case "/healthz": // the process answers; storage is readiness
			_, _ = w.Write([]byte("ok\n"))
		case "/readyz":
			if err := s.ready(r.Context()); err != nil {
				http.Error(w, "not ready: storage: "+public(err), http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ready\n"))
		default: // Dapr's sidecar probes: 204 once serving, as Dapr's
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// readyFor is how long one storage probe's answer stands for readiness:
// /readyz and a scrape of blobleader_locks_ready share it.
const readyFor = time.Second

// probeResource is the resource the readiness probe reads (a read takes no
// lock and creates nothing).
const probeResource = "blobleader-readyz-probe"

// readiness is the last storage probe.
type readiness struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// ready reports whether storage answers: a read of the probe resource, at
// most once per readyFor (callers meanwhile get the last answer).
func (s *Server) ready(ctx context.Context) error {
	s.readiness.mu.Lock()
	defer s.readiness.mu.Unlock()
	if !s.readiness.at.IsZero() && time.Since(s.readiness.at) < readyFor {
		return s.readiness.err
	}
	_, err := s.l.Read(ctx, probeResource)
	s.storage.note(ctx, err)
	if ctx.Err() != nil {
		return err // the asker left: not a reading of storage
	}
	s.readiness.at, s.readiness.err = time.Now(), err
	return err
}

// readyGauge is blobleader_locks_ready, probed at scrape time (at most
// once per readyFor).
func (s *Server) readyGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "blobleader_locks_ready",
		Help: "1 if storage answered the lock service's last readiness probe (a read, at most one per second, made at scrape time or by /readyz), else 0.",
	}, func() float64 {
		if s.ready(context.Background()) != nil {
			return 0
		}
		return 1
	})
}
