package lockapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/mutex"
)

// Unlock and renew statuses, as Dapr's UnlockResponse numbers them.
const (
	statusSuccess      = 0
	statusDoesNotExist = 1
	statusOthers       = 2
)

// checkCommon applies Dapr's checks in Dapr's order (resourceId, lockOwner,
// then the store), then ours.
func (s *Server) checkCommon(r *http.Request, q request) *apiError {
	store := r.PathValue("store")
	switch {
	case q.ResourceID == "":
		return malformed("ResourceId is empty in lock store %s", store)
	case q.LockOwner == "":
		return malformed("LockOwner is empty in lock store %s", store)
	case store != s.cfg.Store:
		return &apiError{http.StatusBadRequest, "ERR_LOCK_STORE_NOT_FOUND", fmt.Sprintf("lock store %s not found", store)}
	case len(q.ResourceID) > mutex.MaxResourceIDLength:
		return malformed("ResourceId is %d bytes in lock store %s: must be at most %d", len(q.ResourceID), store, mutex.MaxResourceIDLength)
	case q.Term < 0:
		return malformed("term %d in lock store %s: must be a term a lock answer gave (> 0), or absent", q.Term, store)
	}
	if err := mutex.CheckOwner(q.LockOwner); err != nil {
		return malformed("LockOwner in lock store %s: %v", store, err)
	}
	return nil
}

func (s *Server) lease(r *http.Request, q request) mutex.Lease {
	return mutex.Lease{Resource: q.ResourceID, ID: LeaseID(r.PathValue("store"), q.ResourceID, q.LockOwner), Owner: q.LockOwner}
}

// lock: POST /v1.0-alpha1/lock/{store}
// {resourceId, lockOwner, expiryInSeconds[, waitSeconds]} →
// 200 {"success": true, "term": T} | 200 {"success": false}.
func (s *Server) lock(w http.ResponseWriter, r *http.Request) {
	arrived := s.now()
	q, e := decode(r)
	store := r.PathValue("store")
	if e == nil && q.Expiry <= 0 {
		e = malformed("ExpiryInSeconds is not positive in lock store %s", store)
	}
	if e == nil {
		e = s.checkCommon(r, q)
	}
	switch {
	case e != nil:
	case q.Expiry < MinExpiry || q.Expiry > MaxExpiry:
		e = malformed("ExpiryInSeconds is %d in lock store %s: must be between %d and %d (the lease storage grants; renew to hold longer)", q.Expiry, store, MinExpiry, MaxExpiry)
	case q.Wait < 0 || time.Duration(q.Wait)*time.Second > s.cfg.MaxWait:
		e = malformed("waitSeconds is %d in lock store %s: must be between 0 and %d", q.Wait, store, int64(s.cfg.MaxWait/time.Second))
	}
	if e != nil {
		writeError(w, e)
		return
	}
	ls := s.lease(r, q)
	expiry := time.Duration(q.Expiry) * time.Second
	// A client believes until its send + expiry − SafetyMargin; its send is
	// before the arrival, so a grant done after cut leaves it nothing.
	cut := arrived.Add(expiry - election.SafetyMargin)
	g, err := s.acquire(r.Context(), ls, expiry, arrived.Add(time.Duration(q.Wait)*time.Second), cut)
	if err == nil && !s.now().Before(cut) {
		s.releaseLate(r.Context(), ls, g.Term, store)
		err = mutex.ErrLocked
	}
	switch {
	case errors.Is(err, mutex.ErrLocked):
		writeJSON(w, http.StatusOK, map[string]any{"success": false})
	case err != nil:
		writeError(w, &apiError{http.StatusInternalServerError, "ERR_TRY_LOCK", "failed to try acquiring lock: " + public(err)})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "term": g.Term})
		s.log.Info("lock granted", "event", "lock_granted", "store", store, "resource", q.ResourceID,
			"owner", q.LockOwner, "term", g.Term, "expiry_s", q.Expiry)
	}
}

// releaseLate gives up a grant that came too late to be of use (a replica
// frozen or storage slow between the request's arrival and the grant): with
// its term, so it frees only this holding, and on a context of its own.
func (s *Server) releaseLate(ctx context.Context, ls mutex.Lease, term int64, store string) {
	err := s.l.Release(context.WithoutCancel(ctx), ls, term)
	s.log.Warn("lock granted too late to be held; released", "event", "lock_released_late", "store", store,
		"resource", ls.Resource, "owner", ls.Owner, "term", term, "released", err == nil)
}

// acquire tries once, then again every retry period until waitEnd — the
// last try at waitEnd itself — unless that try would start at or after cut,
// when a grant could no longer be of use.
func (s *Server) acquire(ctx context.Context, ls mutex.Lease, d time.Duration, waitEnd, cut time.Time) (mutex.Grant, error) {
	for {
		g, err := s.grant(ctx, ls, d)
		if !errors.Is(err, mutex.ErrLocked) {
			return g, err
		}
		now := time.Now()
		next := now.Add(s.retry())
		if next.After(waitEnd) {
			next = waitEnd
		}
		if !now.Before(waitEnd) || !next.Before(cut) {
			return g, err
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return g, err
		case <-t.C:
		}
	}
}

// unlock: POST /v1.0-alpha1/unlock/{store} {resourceId, lockOwner[, term]}
// → 200 {"status": 0 | 1 | 2}.
func (s *Server) unlock(w http.ResponseWriter, r *http.Request) {
	s.leaseOp(w, r, "ERR_UNLOCK", "failed to release lock: ", "lock_released", "unlock", s.l.Release)
}

// renew (added): POST /v1.0-alpha1/renew/{store} {resourceId, lockOwner[,
// term]} → 200 {"status": 0 | 1 | 2}: the lease runs for its expiry again.
func (s *Server) renew(w http.ResponseWriter, r *http.Request) {
	s.leaseOp(w, r, "ERR_RENEW", "failed to renew lock: ", "lock_renewed", "renew", s.l.Renew)
}

// statusText is how a log line reads an unlock's or renew's status.
var statusText = map[int]string{statusSuccess: "done", statusDoesNotExist: "no such lock", statusOthers: "the lock belongs to another holding"}

func (s *Server) leaseOp(w http.ResponseWriter, r *http.Request, code, prefix, event, verb string,
	op func(context.Context, mutex.Lease, int64) error) {
	q, e := decode(r)
	if e == nil {
		e = s.checkCommon(r, q)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	err := op(r.Context(), s.lease(r, q), q.Term)
	status := statusSuccess
	switch {
	case errors.Is(err, mutex.ErrNotHeld):
		status = statusDoesNotExist
	case errors.Is(err, mutex.ErrNotOwner):
		status = statusOthers
	case err != nil:
		writeError(w, &apiError{http.StatusInternalServerError, code, prefix + public(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"status": status})
	s.log.Info(verb+": "+statusText[status], "event", event, "store", r.PathValue("store"), "resource", q.ResourceID, "owner", q.LockOwner,
		"term", q.Term, "status", status)
}

// read (added): GET /v1.0-alpha1/lock/{store}?resourceId=ID →
// 200 {"resourceId", "locked"[, "lastTerm"]}: whether a lease holds the lock
// at the moment of reading, and the last term written (the highest granted
// so far; a holding being granted right now gets a higher one). It never
// names the holder: a lockOwner is all another client needs to unlock.
func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	store, id := r.PathValue("store"), r.URL.Query().Get("resourceId")
	switch {
	case id == "":
		writeError(w, malformed("ResourceId is empty in lock store %s", store))
		return
	case store != s.cfg.Store:
		writeError(w, &apiError{http.StatusBadRequest, "ERR_LOCK_STORE_NOT_FOUND", fmt.Sprintf("lock store %s not found", store)})
		return
	case len(id) > mutex.MaxResourceIDLength:
		writeError(w, malformed("ResourceId is %d bytes in lock store %s: must be at most %d", len(id), store, mutex.MaxResourceIDLength))
		return
	}
	st, err := s.l.Read(r.Context(), id)
	if err != nil {
		writeError(w, &apiError{http.StatusInternalServerError, "ERR_LOCK_READ", "failed to read lock: " + public(err)})
		return
	}
	body := map[string]any{"resourceId": id, "locked": st.Locked}
	if st.Holder != "" { // a holding wrote a term: not the term floor of a blob without one
		body["lastTerm"] = st.Term
	}
	writeJSON(w, http.StatusOK, body)
}
