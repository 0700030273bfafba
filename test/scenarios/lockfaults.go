package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
)

// The lock scenarios' faults, each recorded as a checker.LockFault so the
// checker can judge the run against what was done to it.

// killClientHolding SIGKILLs client i while it holds a lock, and starts a
// client that waits for that lock across the end of its lease: LL1 judges
// how soon a waiting request takes a lock whose holder died, and clients
// that pick resources at random leave it to chance whether one waits then.
// The waiter asks once, for that resource alone, with the longest wait the
// service allows (30 s, beyond the 15 s a lease can have left), on replica
// 0, which no scenario kills.
func (r *lockRig) killClientHolding(i int) bool {
	var h checker.LockLine
	if !await(20*time.Second, func() (ok bool) { h, ok = r.openHolding(i); return ok }) {
		return false
	}
	at := time.Now()
	_ = r.clients[i].Process.Signal(syscall.SIGKILL)
	_ = r.clients[i].Wait()
	r.fault(checker.LockFault{Kind: checker.LockFaultKillClient, Client: h.Client, Resource: h.Resource, At: at})
	r.startClient("waiter-"+h.Client, r.urls[:1], "--resource", h.Resource, "--rounds", "1", "--wait", "30", "--duration", "90s")
	r.t.Logf("killed %s holding %s (term %d); a client waits for it", h.Client, h.Resource, h.Term)
	return true
}

// killedLockTaken reports whether every lock a killed client held has been
// taken by another client since.
func (r *lockRig) killedLockTaken() bool {
	ls := r.lines()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.faults {
		if f.Kind != checker.LockFaultKillClient {
			continue
		}
		taken := false
		for _, l := range ls {
			taken = taken || l.Ev == "got" && l.Resource == f.Resource && l.Client != f.Client && l.Done.After(f.At)
		}
		if !taken {
			return false
		}
	}
	return true
}

// killReplica SIGKILLs replica i while clients use it: with clients
// waiting for locks (waitSeconds), some request is in flight there, and the
// checker wants a client's line showing one (replica_failed sent before it).
func (r *lockRig) killReplica(i int) {
	at := time.Now()
	_ = r.replicas[i].Process.Signal(syscall.SIGKILL)
	_ = r.replicas[i].Wait()
	r.fault(checker.LockFault{Kind: checker.LockFaultKillReplica, At: at})
	r.t.Logf("killed replica %d", i)
}

// slowStorage delays every live replica's storage traffic by oneWay each
// way (below the service's request timeout) for d: slow storage, under
// which holders keep renewing and waiters keep getting locks.
func (r *lockRig) slowStorage(ctx context.Context, oneWay, d time.Duration) {
	var lats []*chaos.Latency
	at := time.Now()
	for i, px := range r.proxies {
		if r.replicas[i].ProcessState != nil {
			continue
		}
		lat := &chaos.Latency{Latency: oneWay.Milliseconds(), Stream: chaos.Both, Proxy: px}
		if err := lat.Inject(ctx); err != nil {
			r.t.Fatalf("slow storage on replica %d: %v", i, err)
		}
		lats = append(lats, lat)
	}
	time.Sleep(d) // the fault's duration, not a wait for an event
	for _, lat := range lats {
		if err := lat.Remove(ctx); err != nil {
			r.t.Fatalf("remove slow storage: %v", err)
		}
	}
	r.fault(checker.LockFault{Kind: checker.LockFaultSlowStorage, At: at, Until: time.Now()})
	r.t.Logf("storage slowed by %v each way for %v on %d replicas", oneWay, d, len(lats))
}

// lateUnlock sends, for a client that holds a resource again at a later
// term, an unlock carrying its earlier, ended term: the request a network
// delivered late. It reports whether it found such a holding.
func (r *lockRig) lateUnlock() bool {
	return await(20*time.Second, func() bool {
		ls := r.lines()
		for _, cur := range r.openHoldings() {
			for _, l := range ls {
				if l.Ev != "got" || l.Client != cur.Client || l.Resource != cur.Resource || l.Term >= cur.Term {
					continue
				}
				body, _ := json.Marshal(map[string]any{"resourceId": l.Resource, "lockOwner": l.Client, "term": l.Term})
				at := time.Now()
				resp, err := http.Post(r.urls[0]+"/v1.0-alpha1/unlock/"+lockStore, "application/json", bytes.NewReader(body))
				if err != nil {
					return false
				}
				var m struct{ Status int }
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				r.fault(checker.LockFault{Kind: checker.LockFaultLateUnlock, Client: l.Client, Resource: l.Resource, Term: l.Term, Status: m.Status, At: at})
				r.t.Logf("late unlock of %s's ended term %d on %s (holding term %d): status %d", l.Client, l.Term, l.Resource, cur.Term, m.Status)
				return true
			}
		}
		return false
	})
}

// deleteLocks deletes the lock blobs' container while locks are held: a
// forced loss of every held resource.
func (r *lockRig) deleteLocks(ctx context.Context) {
	at := time.Now()
	if _, err := r.locks.Delete(ctx, nil); err != nil {
		r.t.Fatalf("delete the lock container: %v", err)
	}
	for k := 0; k < r.s.Resources; k++ {
		r.fault(checker.LockFault{Kind: checker.LockFaultDeleteBlob, Resource: fmt.Sprintf("res-%d", k), At: at})
	}
	r.t.Logf("deleted the lock container")
}
