package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/worker/storage"
)

// Why the gate refuses an acquisition (transient to the shard's elector:
// it asks again at its next poll).
var (
	errStale      = errors.New("shard: assignment view is stale")
	errWarmingUp  = errors.New("shard: standby warming up after a stale view")
	errNotForUs   = errors.New("shard: not assigned to this worker")
	errNoViewYet  = errors.New("shard: no assignment read yet")
	errOlderTerms = errors.New("shard: assignment from an older term ignored")
)

// view is this worker's knowledge of the assignment: the highest one read
// (by term, then version), and how fresh that knowledge is. Freshness is
// measured from the *send* time of the last successful read: what it
// returned is at least as new as storage was then.
type view struct {
	mu         sync.Mutex
	identity   string
	ttl        time.Duration
	warmup     time.Duration
	a          *Assignment
	etag       azcore.ETag
	lastSent   time.Time   // send time of the last successful read
	freshSince time.Time   // send time of the first successful read after the view was stale
	changedAt  time.Time   // when we adopted the current assignment
	told       azcore.ETag // the last assignment we reported ignoring (each is reported once)
}

// refresh reads the assignment (a conditional GET: unchanged costs one
// request and no body) and adopts it if it orders after the one we have.
// One that is not valid is no view at all: not followed, and not a fresh
// read either (the leader, which owns it, writes it again); one from an
// older term is ignored, the read still fresh; so is one whose term the
// lock's record does not confirm (a planted term: no view). Each ignored
// assignment is logged once. Each request has the request timeout.
func (v *view) refresh(ctx context.Context, w *Worker) error {
	rt := w.cfg.Election.RequestTimeout()
	rctx, cancel := context.WithTimeout(ctx, rt)
	defer cancel()
	sent := time.Now()
	v.mu.Lock()
	etag, seen := v.etag, v.a != nil
	v.mu.Unlock()
	var opts *blob.DownloadStreamOptions
	if seen && etag != "" {
		opts = &blob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etag}}}
	}
	resp, err := w.cfg.Container.NewBlobClient(w.layout.Assignment()).DownloadStream(storage.WithOp(rctx, "assignment_read"), opts)
	switch {
	case err == nil && resp.Body == nil:
		// The SDK turns 304 Not Modified into a success without a body.
		v.touch(sent)
		return nil
	case err == nil:
		defer resp.Body.Close()
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if rerr != nil {
			return rerr
		}
		var a Assignment
		if derr := decode(b, &a); derr != nil {
			err := fmt.Errorf("%w: the assignment: %v", errMalformed, derr)
			if v.tell(*resp.ETag) {
				w.log.Warn("ignoring an assignment that is not valid; the leader writes it again", "err", err)
			}
			return err
		}
		// A term is data, never an order: an assignment is followed only
		// under a term the lock's record has shown.
		lctx, lcancel := context.WithTimeout(ctx, rt)
		defer lcancel()
		lockTerm, ok, cerr := w.confirmTerm(lctx, a.Term)
		if cerr != nil {
			return cerr
		}
		if !ok {
			err := fmt.Errorf("%w: the assignment's term %d is above the lock's (%d): a planted term", errMalformed, a.Term, lockTerm)
			if v.tell(*resp.ETag) {
				w.log.Warn("ignoring an assignment whose term is above the lock's; the leader writes it again", "term_found", a.Term, "lock_term", lockTerm)
			}
			return err
		}
		err = v.adopt(&a, *resp.ETag, sent)
		if errors.Is(err, errOlderTerms) {
			if v.tell(*resp.ETag) {
				w.log.Warn("ignoring an assignment from an older term", "term", a.Term, "version", a.Version)
			}
			return nil
		}
		return err
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound):
		// No leader has published yet: nothing to act on, but storage answered.
		v.touch(sent)
		return nil
	}
	return err
}

// tell reports whether the assignment with etag is yet to be reported as
// ignored, and notes that it now is.
func (v *view) tell(etag azcore.ETag) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.told == etag {
		return false
	}
	v.told = etag
	return true
}

func (v *view) touch(sent time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.lastSent.IsZero():
		// The first view: nothing stale to recover from, so no warm-up (in a
		// rolling restart the restarted member takes over the next leaver's
		// shards at once).
		v.freshSince = sent.Add(-v.warmup)
	case sent.Sub(v.lastSent) > v.ttl:
		v.freshSince = sent
	}
	if sent.After(v.lastSent) {
		v.lastSent = sent
	}
}

func (v *view) adopt(a *Assignment, etag azcore.ETag, sent time.Time) error {
	v.touch(sent)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.a != nil && a.Term < v.a.Term {
		return errOlderTerms
	}
	if a.newer(v.a) {
		v.a, v.changedAt = a, time.Now()
	}
	v.etag = etag
	return nil
}

// current returns the assignment in force and whether the view is fresh.
func (v *view) current(now time.Time) (*Assignment, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.a, !v.lastSent.IsZero() && now.Sub(v.lastSent) <= v.ttl
}

// mayAcquire is the gate in front of every shard acquisition: only with a
// fresh view, only the shard's owner, or its standby once warmed up.
func (v *view) mayAcquire(s int, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.lastSent.IsZero():
		return errNoViewYet
	case now.Sub(v.lastSent) > v.ttl:
		return errStale
	case v.a.owner(s) == v.identity:
		return nil
	case v.a.standby(s) == v.identity:
		if now.Sub(v.freshSince) < v.warmup {
			return errWarmingUp
		}
		return nil
	}
	return errNotForUs
}
