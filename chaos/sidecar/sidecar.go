package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/blobleader/blobleader/chaos"
)

// Sidecar applies the plans it reads from its Store to its Proxy.
type Sidecar struct {
	Proxy *chaos.Proxy
	Store *Store
	Poll  time.Duration // how often to read the plan and write the state; default 1 s
	// RequestTimeout bounds each control-blob request (a token fetch runs
	// inside it); default 10 s. It is not the poll period: a slow token
	// endpoint must still get its answer in.
	RequestTimeout time.Duration
	Log            *slog.Logger // default: discard
	Now            func() time.Time
	// StatusURL, if set, is the worker's GET /status
	// (http://127.0.0.1:8080/status in the group); the sidecar relays the
	// answer in its state on every poll.
	StatusURL string
	// StopURL, if set, is the worker's control endpoint POST /stop (its
	// --control-listen, http://127.0.0.1:8081/stop in the group); a plan's
	// Stop request is delivered there.
	StopURL string

	mu        sync.Mutex
	traffic   *chaos.Traffic
	active    map[string]active
	state     State
	etag      azcore.ETag
	expiresAt time.Time
}

type active struct {
	spec PlanFault
	f    chaos.Fault
}

func (s *Sidecar) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sidecar) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Run counts the proxy's traffic, then reads the plan every Poll, applies
// changes and writes the state, until ctx ends; then it removes every fault
// and writes a last state. Storage errors are logged and retried: the
// sidecar never exits because storage is away (that is what it tests).
func (s *Sidecar) Run(ctx context.Context) error {
	if s.Proxy == nil || s.Store == nil {
		return errors.New("sidecar: needs a proxy and a store")
	}
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	tr, err := s.Proxy.CountTraffic(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.traffic = tr
	s.mu.Unlock()

	rt := s.RequestTimeout
	if rt <= 0 {
		rt = 10 * time.Second
	}
	s.recallStop(ctx, rt)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		s.Step(ctx, rt)
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			s.removeAll(final)
			st := s.snapshot()
			st.Error = "sidecar stopped"
			_ = s.Store.WriteState(final, st)
			return nil
		case <-tick.C:
		}
	}
}

// Step reads the plan once (each storage call bounded by timeout), applies it
// if it changed or expired, and writes the state.
func (s *Sidecar) Step(ctx context.Context, timeout time.Duration) {
	s.mu.Lock()
	s.initLocked()
	s.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	plan, tag, changed, err := s.Store.ReadPlan(rctx, s.etagNow())
	cancel()
	switch {
	case errors.Is(err, ErrPlan):
		s.setEtag(tag)
		s.setError(err.Error())
		s.log().Error("plan rejected", "err", err)
	case err != nil:
		s.log().Warn("cannot read the plan; keeping the faults in place", "err", err)
	case changed:
		s.setEtag(tag)
		s.Apply(ctx, plan)
	default:
		s.expire(ctx)
	}
	st := s.snapshot()
	if s.StatusURL != "" {
		sctx, cancel := context.WithTimeout(ctx, s.statusTimeout())
		st.Worker, st.WorkerError = fetchStatus(sctx, s.StatusURL)
		st.WorkerAt = s.now().UTC()
		cancel()
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.Store.WriteState(wctx, st); err != nil && ctx.Err() == nil {
		s.log().Warn("cannot write the state", "err", err)
	}
}

// Apply makes the proxy's faults exactly the plan's: faults no longer in the
// plan (or whose parameters changed) are removed first, then new ones are
// injected. The state records the plan's version and any error; a fault that
// fails to inject is left out.
func (s *Sidecar) Apply(ctx context.Context, p Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	var errs []string
	want := map[string]PlanFault{}
	for _, pf := range p.Faults {
		if _, dup := want[pf.ID]; dup {
			errs = append(errs, fmt.Sprintf("fault id %q appears twice", pf.ID))
			continue
		}
		want[pf.ID] = pf
	}
	expired := !p.Expires.IsZero() && !s.now().Before(p.Expires)
	if expired {
		want = map[string]PlanFault{}
	}
	for id, a := range s.active {
		if pf, ok := want[id]; ok && pf.same(a.spec) {
			continue
		}
		if err := a.f.Remove(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("remove %s: %v", id, err))
			continue
		}
		delete(s.active, id)
		s.log().Info("fault removed", "id", id, "kind", a.spec.Kind)
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pf := want[id]
		if _, ok := s.active[id]; ok {
			continue
		}
		f, err := pf.Build(s.Proxy)
		if err == nil {
			err = f.Inject(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("inject %s: %v", id, err))
			continue
		}
		s.active[id] = active{spec: pf, f: f}
		s.log().Info("fault injected", "id", id, "kind", pf.Kind, "params", string(pf.Params))
	}
	if p.Stop != nil && !expired {
		s.stopLocked(ctx, *p.Stop)
	}
	s.state.Version = p.Version
	s.state.Expired = expired
	s.state.Error = strings.Join(errs, "; ")
	if expired {
		s.log().Warn("plan expired; every fault removed", "version", p.Version, "expires", p.Expires)
	}
	s.expiresAt = p.Expires
}

// expire drops the faults of a plan that has passed its expiry unchanged.
func (s *Sidecar) expire(ctx context.Context) {
	s.mu.Lock()
	exp, ver, done := s.expiresAt, s.state.Version, s.state.Expired
	s.mu.Unlock()
	if exp.IsZero() || done || s.now().Before(exp) {
		return
	}
	s.Apply(ctx, Plan{Version: ver, Expires: exp})
}

func (s *Sidecar) removeAll(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, a := range s.active {
		if err := a.f.Remove(ctx); err != nil {
			s.log().Error("remove fault on exit", "id", id, "err", err)
			continue
		}
		delete(s.active, id)
	}
}

func (s *Sidecar) snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	st.Faults = make([]string, 0, len(s.active))
	for id := range s.active {
		st.Faults = append(st.Faults, id)
	}
	sort.Strings(st.Faults)
	if s.traffic != nil {
		st.Upstream, st.Downstream = s.traffic.Upstream.Load(), s.traffic.Downstream.Load()
	}
	st.At = s.now().UTC()
	return st
}

func (s *Sidecar) etagNow() azcore.ETag {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etag
}

func (s *Sidecar) setEtag(t azcore.ETag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.etag = t
}

func (s *Sidecar) setError(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Error = msg
}

func (s *Sidecar) initLocked() {
	if s.active == nil {
		s.active = map[string]active{}
		s.state = State{Name: s.Store.Name, Started: s.now().UTC()}
	}
}

// fetchStatus GETs the worker's /status; it returns the JSON or why not.
func fetchStatus(ctx context.Context, url string) (json.RawMessage, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case err != nil:
		return nil, err.Error()
	case resp.StatusCode != http.StatusOK:
		return nil, "status " + resp.Status
	case !json.Valid(b):
		return nil, "not JSON: " + strings.TrimSpace(string(b))
	}
	return json.RawMessage(b), ""
}
