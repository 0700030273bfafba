package sidecar

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The graceful stop on Azure. ARM has no documented way to SIGTERM one
// container (BeginRestart is not documented to, and `az container stop` is
// reported to SIGKILL), so the harness asks the worker itself: it puts a
// StopRequest in the plan, the sidecar POSTs to the worker's loopback
// control endpoint (the worker's --control-listen), and the worker sends
// itself SIGTERM — the very path an orchestrator's stop takes. ACI's restart
// policy (Always) then starts the worker container again.

// stopTimeout bounds the POST to the worker (loopback).
const stopTimeout = 5 * time.Second

// stopLocked delivers req to the worker once; s.mu is held.
func (s *Sidecar) stopLocked(ctx context.Context, req StopRequest) {
	if req.ID == "" || (s.state.Stop != nil && s.state.Stop.ID == req.ID) {
		return
	}
	if !req.Before.IsZero() && !s.now().Before(req.Before) {
		s.log().Warn("stop request too old; ignored", "id", req.ID, "before", req.Before)
		return
	}
	res := StopResult{ID: req.ID}
	if s.StopURL == "" {
		res.Error = "the sidecar has no worker stop URL (--worker-stop)"
	} else {
		cctx, cancel := context.WithTimeout(ctx, stopTimeout)
		res.Error = postStop(cctx, s.StopURL)
		cancel()
	}
	res.At = s.now().UTC()
	s.state.Stop = &res
	if res.Error != "" {
		s.log().Error("could not ask the worker to stop", "id", req.ID, "err", res.Error)
		return
	}
	s.log().Info("worker asked to stop gracefully", "id", req.ID)
}

// postStop POSTs to the worker's stop endpoint; it returns why that failed,
// or "" once the worker accepted.
func postStop(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Sprintf("worker answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return ""
}

// recallStop reads the sidecar's last state (best effort), so a sidecar that
// restarted remembers which stop it already delivered.
func (s *Sidecar) recallStop(ctx context.Context, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, ok, err := s.Store.ReadState(rctx)
	if err != nil || !ok || st.Stop == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	s.state.Stop = st.Stop
}

func (s *Sidecar) statusTimeout() time.Duration {
	p := s.Poll
	if p <= 0 {
		p = time.Second
	}
	return max(p/2, 250*time.Millisecond)
}
