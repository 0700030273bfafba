package lockapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/mutex"
)

// The lock service's operations, one per method, each answered the same
// over HTTP (below) and gRPC (grpc.go).

// Unlock and renew statuses, as Dapr's UnlockResponse numbers them.
const (
	statusSuccess      = 0
	statusDoesNotExist = 1
	statusOthers       = 2
)

// checkCommon applies Dapr's checks in Dapr's order (resourceId, lockOwner,
// then the store), then ours.
func (s *Server) checkCommon(store string, q request) *apiError {
	switch {
	case q.ResourceID == "":
		return malformed("ResourceId is empty in lock store %s", store)
	case q.LockOwner == "":
		return malformed("LockOwner is empty in lock store %s", store)
	case store != s.cfg.Store:
		return storeNotFound(store)
	case len(q.ResourceID) > mutex.MaxResourceIDLength:
		return malformed("ResourceId is %d bytes in lock store %s: must be at most %d", len(q.ResourceID), store, mutex.MaxResourceIDLength)
	case q.Term < 0:
		return malformed("term %d in lock store %s: must be a term a lock answer gave (> 0), or absent", q.Term, store)
	}
	var bad *election.ConfigError
	if errors.As(mutex.CheckOwner(q.LockOwner), &bad) {
		return malformed("LockOwner in lock store %s: %s", store, bad.Rule)
	}
	return nil
}

func leaseOf(store string, q request) mutex.Lease {
	return mutex.Lease{Resource: q.ResourceID, ID: LeaseID(store, q.ResourceID, q.LockOwner), Owner: q.LockOwner}
}

// tryLock is one lock request that arrived at arrived: granted with its
// term, refused (false, 0, nil), or an error answer.
func (s *Server) tryLock(ctx context.Context, arrived time.Time, store string, q request) (bool, int64, *apiError) {
	var e *apiError
	if q.Expiry <= 0 {
		e = malformed("ExpiryInSeconds is not positive in lock store %s", store)
	}
	if e == nil {
		e = s.checkCommon(store, q)
	}
	switch {
	case e != nil:
	case q.Expiry < MinExpiry || q.Expiry > MaxExpiry:
		e = malformed("ExpiryInSeconds is %d in lock store %s: must be between %d and %d (the lease storage grants; renew to hold longer)", q.Expiry, store, MinExpiry, MaxExpiry)
	case q.Wait < 0 || time.Duration(q.Wait)*time.Second > s.cfg.MaxWait:
		e = malformed("waitSeconds is %d in lock store %s: must be between 0 and %d", q.Wait, store, int64(s.cfg.MaxWait/time.Second))
	}
	if e != nil {
		return false, 0, e
	}
	ls := leaseOf(store, q)
	expiry := time.Duration(q.Expiry) * time.Second
	// A client believes until its send + expiry − SafetyMargin; its send is
	// before the arrival, so a grant done after cut leaves it nothing.
	cut := arrived.Add(expiry - election.SafetyMargin)
	g, err := s.acquire(ctx, ls, expiry, arrived.Add(time.Duration(q.Wait)*time.Second), cut)
	late := err == nil && !s.now().Before(cut)
	if err == nil && (late || ctx.Err() != nil) {
		// Too late to be held, or nobody is left to hear the answer.
		s.releaseUnheard(ctx, ls, g.Term, store, late)
		err = ctx.Err()
	}
	s.observeWait(q.Wait, arrived, err, late)
	switch {
	case late:
		s.metrics.refusals.WithLabelValues(refusedLate).Inc()
		return false, 0, nil
	case errors.Is(err, mutex.ErrLocked):
		s.metrics.refusals.WithLabelValues(refusedHeld).Inc()
		return false, 0, nil
	case err != nil:
		s.storage.note(ctx, err)
		return false, 0, &apiError{http.StatusInternalServerError, "ERR_TRY_LOCK", "failed to try acquiring lock: " + public(err)}
	}
	s.metrics.grants.Inc()
	s.log.Info("lock granted", "event", "lock_granted", "store", store, "resource", q.ResourceID,
		"owner", q.LockOwner, "term", g.Term, "expiry_s", q.Expiry)
	return true, g.Term, nil
}

// releaseUnheard gives up a grant whose answer would be of no use: it came
// too late to be held (a replica frozen or storage slow between the
// request's arrival and the grant), or the request ended (the client left,
// its deadline passed). It releases with the term, so it frees only this
// holding, on a context of its own.
func (s *Server) releaseUnheard(ctx context.Context, ls mutex.Lease, term int64, store string, late bool) {
	err := s.l.Release(context.WithoutCancel(ctx), ls, term)
	if late {
		s.log.Warn("lock granted too late to be held; released", "event", "lock_released_late", "store", store,
			"resource", ls.Resource, "owner", ls.Owner, "term", term, "released", err == nil)
	}
}

// observeWait records a waiting lock request's wait and outcome.
func (s *Server) observeWait(wait int64, arrived time.Time, err error, late bool) {
	if wait <= 0 {
		return
	}
	o := "granted"
	switch {
	case late:
		o = refusedLate
	case errors.Is(err, mutex.ErrLocked):
		o = "timed_out"
	case err != nil:
		o = "error"
	}
	s.metrics.waits.WithLabelValues(o).Observe(time.Since(arrived).Seconds())
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

// leaseVerb is unlock or renew: the Locker operation, and how it is named
// in errors and logs.
type leaseVerb struct {
	name, code, prefix, event string
	op                        func(*mutex.Locker, context.Context, mutex.Lease, int64) error
}

var (
	verbUnlock = leaseVerb{"unlock", "ERR_UNLOCK", "failed to release lock: ", "lock_released", (*mutex.Locker).Release}
	verbRenew  = leaseVerb{"renew", "ERR_RENEW", "failed to renew lock: ", "lock_renewed", (*mutex.Locker).Renew}
)

// statusText is how a log line reads an unlock's or renew's status.
var statusText = map[int]string{statusSuccess: "done", statusDoesNotExist: "no such lock", statusOthers: "the lock belongs to another holding"}

// leaseOp is one unlock or renew: Dapr's status, or an error answer.
func (s *Server) leaseOp(ctx context.Context, store string, q request, v leaseVerb) (int, *apiError) {
	if e := s.checkCommon(store, q); e != nil {
		return 0, e
	}
	err := v.op(s.l, ctx, leaseOf(store, q), q.Term)
	status := statusSuccess
	switch {
	case errors.Is(err, mutex.ErrNotHeld):
		status = statusDoesNotExist
		s.metrics.refusals.WithLabelValues(refusedNotFound).Inc()
	case errors.Is(err, mutex.ErrNotOwner):
		status = statusOthers
		s.metrics.refusals.WithLabelValues(refusedOthers).Inc()
	case err != nil:
		s.storage.note(ctx, err)
		return 0, &apiError{http.StatusInternalServerError, v.code, v.prefix + public(err)}
	}
	s.log.Info(v.name+": "+statusText[status], "event", v.event, "store", store, "resource", q.ResourceID, "owner", q.LockOwner,
		"term", q.Term, "status", status)
	return status, nil
}

// lock: POST /v1.0-alpha1/lock/{store}
// {resourceId, lockOwner, expiryInSeconds[, waitSeconds]} →
// 200 {"success": true, "term": T} | 200 {"success": false}.
func (s *Server) lock(w http.ResponseWriter, r *http.Request) {
	done := s.metrics.begin(protoHTTP, "lock")
	arrived := s.now()
	q, e := decode(r)
	var ok bool
	var term int64
	if e == nil {
		ok, term, e = s.tryLock(r.Context(), arrived, r.PathValue("store"), q)
	}
	done(outcome(e))
	switch {
	case e != nil:
		writeError(w, e)
	case ok:
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "term": term})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"success": false})
	}
}

// unlock: POST /v1.0-alpha1/unlock/{store} {resourceId, lockOwner[, term]}
// → 200 {"status": 0 | 1 | 2}.
func (s *Server) unlock(w http.ResponseWriter, r *http.Request) { s.leaseHTTP(w, r, verbUnlock) }

// renew (added): POST /v1.0-alpha1/renew/{store} {resourceId, lockOwner[,
// term]} → 200 {"status": 0 | 1 | 2}: the lease runs for its expiry again.
func (s *Server) renew(w http.ResponseWriter, r *http.Request) { s.leaseHTTP(w, r, verbRenew) }

func (s *Server) leaseHTTP(w http.ResponseWriter, r *http.Request, v leaseVerb) {
	done := s.metrics.begin(protoHTTP, v.name)
	q, e := decode(r)
	var status int
	if e == nil {
		status, e = s.leaseOp(r.Context(), r.PathValue("store"), q, v)
	}
	done(outcome(e))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"status": status})
}

// read (added): GET /v1.0-alpha1/lock/{store}?resourceId=ID →
// 200 {"resourceId", "locked"[, "lastTerm"]}: whether a lease holds the lock
// at the moment of reading, and the last term written (the highest granted
// so far; a holding being granted right now gets a higher one). It never
// names the holder: a lockOwner is all another client needs to unlock.
func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	done := s.metrics.begin(protoHTTP, "read")
	body, e := s.readLock(r.Context(), r.PathValue("store"), r.URL.Query().Get("resourceId"))
	done(outcome(e))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) readLock(ctx context.Context, store, id string) (map[string]any, *apiError) {
	switch {
	case id == "":
		return nil, malformed("ResourceId is empty in lock store %s", store)
	case store != s.cfg.Store:
		return nil, storeNotFound(store)
	case len(id) > mutex.MaxResourceIDLength:
		return nil, malformed("ResourceId is %d bytes in lock store %s: must be at most %d", len(id), store, mutex.MaxResourceIDLength)
	}
	st, err := s.l.Read(ctx, id)
	s.storage.note(ctx, err)
	if err != nil {
		return nil, &apiError{http.StatusInternalServerError, "ERR_LOCK_READ", "failed to read lock: " + public(err)}
	}
	body := map[string]any{"resourceId": id, "locked": st.Locked}
	if st.Holder != "" { // a holding wrote a term: not the term floor of a blob without one
		body["lastTerm"] = st.Term
	}
	return body, nil
}
