package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
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
// The waiter asks once, for that resource alone, on replica 0, which no
// scenario kills, with the longest wait the service allows (30 s) and the
// longest expiry (60 s): the service stops a waiting request's tries where
// a grant would leave no belief (its expiry − SafetyMargin after arrival),
// so the rig's 15 s expiry would end the wait before the lease a holder
// killed early in its holding has left. The kill comes while the holding
// has more than 3 s of belief left (openHoldings), so the waiter has 5 s
// to start and ask before the lease can end. A larger margin would rule
// out most holdings granted after a wait: their belief counts from the
// request's send.
func (r *lockRig) killClientHolding(i int) bool {
	var h checker.LockLine
	if !await(20*time.Second, func() (ok bool) { h, ok = r.openHolding(i); return ok }) {
		return false
	}
	at := time.Now()
	_ = r.clients[i].Process.Signal(syscall.SIGKILL)
	_ = r.clients[i].Wait()
	r.fault(checker.LockFault{Kind: checker.LockFaultKillClient, Client: h.Client, Resource: h.Resource, At: at})
	r.startClient("waiter-"+h.Client, r.urls[:1], "--resource", h.Resource, "--rounds", "1", "--wait", "30", "--expiry", "60", "--duration", "90s")
	r.t.Logf("killed %s holding %s (term %d, %v of belief left); a client waits for it", h.Client, h.Resource, h.Term,
		time.Until(h.ValidUntil).Round(time.Millisecond))
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

// killReplica SIGKILLs replica i while a request is in flight there, so
// that some client's line shows a request the kill cut (the checker's
// evidence that the fault was met). Clients at random leave that to
// chance, so the rig makes one sure, on a resource of its own that no
// other client contends for: a blocker client takes it through replica 0,
// which no scenario kills, and holds it at least 5 s; a waiter asks
// replica i for it with a 30 s wait (replica 0 after, so it fails over and
// takes the resource once the blocker lets go; a second round in case the
// first wait ran out on a slow machine). The kill comes once the waiter
// is connected to replica i while the blocker still holds: its request
// cannot have been answered. A machine that stalls past the blocker's
// holding spoils an attempt, not the scenario: the rig starts over on a
// fresh resource, up to killAttempts times, and reports false only if
// none reached that state.
func (r *lockRig) killReplica(i int) bool {
	for attempt := 1; attempt <= killAttempts; attempt++ {
		res := fmt.Sprintf("kill-replica-%d-%d", i, attempt)
		if r.tryKillReplica(i, res) {
			return true
		}
		r.t.Logf("attempt %d of %d to kill replica %d with a request in flight missed its window; starting over", attempt, killAttempts, i)
	}
	return false
}

// killAttempts bounds killReplica's fresh starts.
const killAttempts = 3

// tryKillReplica is one attempt of killReplica on resource res; its
// clients run on whether or not it kills, and res is judged like the rest.
func (r *lockRig) tryKillReplica(i int, res string) bool {
	r.mu.Lock()
	r.own = append(r.own, res)
	r.mu.Unlock()
	blocker := "blocker-" + res
	r.startClient(blocker, r.urls[:1], "--resource", res, "--rounds", "1", "--wait", "30", "--writes", "25", "--duration", "90s")
	var held checker.LockLine
	if !await(30*time.Second, func() (ok bool) { held, ok = r.openHoldingOf(blocker); return ok }) {
		r.t.Logf("the blocker never held %s", res)
		return false
	}
	r.startClient("waiter-"+res, []string{r.urls[i], r.urls[0]}, "--resource", res, "--rounds", "2", "--wait", "30", "--duration", "75s")
	waiter := r.clients[len(r.clients)-1].Process.Pid
	port := portOf(r.urls[i])
	if !await(30*time.Second, func() bool { return connectedTo(waiter, port) }) {
		r.t.Logf("the waiter never connected to replica %d for %s", i, res)
		return false
	}
	if r.stallBeforeKill != nil {
		r.stallBeforeKill(blocker)
	}
	// The blocker sleeps 200 ms after each of its 25 appends: it holds at
	// least 5 s after its got line, however slow the machine; 3 s leaves
	// the kill a margin of 2.
	if _, open := r.openHoldingOf(blocker); !open || time.Since(held.Done) > 3*time.Second {
		r.t.Logf("the blocker's holding of %s ended before the kill could meet the waiter", res)
		return false
	}
	at := time.Now()
	_ = r.replicas[i].Process.Signal(syscall.SIGKILL)
	_ = r.replicas[i].Wait()
	r.fault(checker.LockFault{Kind: checker.LockFaultKillReplica, At: at})
	r.t.Logf("killed replica %d while a client waited there for %s (held by %s, term %d)", i, res, blocker, held.Term)
	return true
}

// portOf is the port of a replica's base URL (http://127.0.0.1:port).
func portOf(u string) int {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	n, _ := strconv.Atoi(p)
	return n
}

// connectedTo reports whether process pid has an established TCP
// connection to port on loopback: its socket descriptors matched against
// the kernel's table of TCP sockets (Linux /proc).
func connectedTo(pid, port int) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	socks := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			socks[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	// sl local_address rem_address st … inode: rem_address is hex
	// "0100007F:1F90", st 01 is ESTABLISHED, the inode is field 10.
	remote := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 10 && f[2] == remote && f[3] == "01" && socks[f[9]] {
			return true
		}
	}
	return false
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
	for _, res := range r.resources() {
		r.fault(checker.LockFault{Kind: checker.LockFaultDeleteBlob, Resource: res, At: at})
	}
	r.t.Logf("deleted the lock container")
}
