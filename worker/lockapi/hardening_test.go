package lockapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
)

const lockPath, unlockPath = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore"

// A waiting lock request tries once more at its deadline: it never answers
// false before waitSeconds have passed, and a lock freed within the wait is
// got by its waiter.
func TestAPI_WaitTriesAgainAtItsDeadline(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "")
	call(t, srv, "POST", lockPath, `{"resourceId":"held","lockOwner":"a","expiryInSeconds":15}`)
	for i := range 6 {
		start := time.Now()
		_, got := call(t, srv, "POST", lockPath, `{"resourceId":"held","lockOwner":"b","expiryInSeconds":15,"waitSeconds":1}`)
		if took := time.Since(start); got != `{"success":false}` || took < time.Second {
			t.Fatalf("try %d: waitSeconds 1 on a held lock answered %s after %s; want false, not before 1 s", i, got, took)
		}
	}
	// Eight waiters, each on its own lock, freed 0.5 s into a 1 s wait:
	// every waiter whose lock was free before its wait ended gets it.
	for k := range 8 {
		call(t, srv, "POST", lockPath, fmt.Sprintf(`{"resourceId":"w%d","lockOwner":"a","expiryInSeconds":15}`, k))
	}
	var wg sync.WaitGroup
	var started, freed [8]time.Time
	var got [8]bool
	for k := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started[k] = time.Now()
			_, body := call(t, srv, "POST", lockPath, fmt.Sprintf(`{"resourceId":"w%d","lockOwner":"b","expiryInSeconds":15,"waitSeconds":1}`, k))
			got[k] = strings.Contains(body, `"success":true`)
		}()
	}
	time.Sleep(500 * time.Millisecond) // the free comes mid-wait: the property under test
	var frees sync.WaitGroup
	for k := range 8 {
		frees.Add(1)
		go func() {
			defer frees.Done()
			call(t, srv, "POST", unlockPath, fmt.Sprintf(`{"resourceId":"w%d","lockOwner":"a"}`, k))
			freed[k] = time.Now()
		}()
	}
	frees.Wait()
	wg.Wait()
	judged := 0
	for k := range 8 {
		if freed[k].After(started[k].Add(time.Second)) {
			continue // freed after the wait could have ended (a loaded machine): no claim
		}
		judged++
		if !got[k] {
			t.Errorf("waiter %d did not get its lock, freed %s into its 1 s wait", k, freed[k].Sub(started[k]).Round(time.Millisecond))
		}
	}
	if judged == 0 {
		t.Fatal("no lock was freed within its waiter's wait: the run shows nothing")
	}
	t.Logf("%d of 8 locks were freed within their waiter's wait; each was got", judged)
}

// The read says only what is true at the moment of reading, and never names
// the holder's lockOwner (all that another client needs to unlock it): here
// a new lease is taken and its term not yet written, so the record still
// names the ended holding.
func TestAPI_ReadSaysOnlyWhatIsTrue(t *testing.T) {
	t.Parallel()
	name := freshContainer()
	srv := newAPI(t, "lockstore", name, "")
	_, got := call(t, srv, "POST", lockPath, `{"resourceId":"acct","lockOwner":"vader-secret-owner","expiryInSeconds":15}`)
	term := int64(field(t, got, "term").(float64))
	_, read := call(t, srv, "GET", lockPath+"?resourceId=acct", "")
	if strings.Contains(read, "vader-secret-owner") || field(t, read, "holder") != nil {
		t.Fatalf("read = %s: it names the holder's lockOwner", read)
	}
	if field(t, read, "locked") != true || field(t, read, "lastTerm") != float64(term) {
		t.Fatalf("read = %s, want locked with lastTerm %d", read, term)
	}
	call(t, srv, "POST", unlockPath, `{"resourceId":"acct","lockOwner":"vader-secret-owner"}`)
	// A grant between its lease and its term write.
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: server.ConnectionString(), Container: name, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := mutex.BlobLease(c, mutex.DefaultPrefix, "acct")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lk.Acquire(ctx, lockapi.LeaseID("lockstore", "acct", "luke"), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	_, read = call(t, srv, "GET", lockPath+"?resourceId=acct", "")
	if strings.Contains(read, "vader") || field(t, read, "term") != nil || field(t, read, "locked") != true {
		t.Fatalf("read while the next grant has its lease but not its term = %s; want locked, naming no holder and no current term", read)
	}
}

// A grant that completes later than the request's arrival + expiry − the
// safety margin (here: the replica frozen 14 s between its grant and its
// answer, for a 15 s lock) leaves its client no time to hold it: it is
// released and answered as not taken.
func TestAPI_LateGrantIsReleasedAndAnsweredFalse(t *testing.T) {
	t.Parallel()
	srv, api := newAPIServer(t, "lockstore", freshContainer(), "")
	var calls atomic.Int32
	lockapi.SetClock(api, func() time.Time {
		if calls.Add(1) == 2 { // the second reading of the first request: after its grant
			return time.Now().Add(14 * time.Second)
		}
		return time.Now()
	})
	if _, got := call(t, srv, "POST", lockPath, `{"resourceId":"frozen","lockOwner":"a","expiryInSeconds":15}`); got != `{"success":false}` {
		t.Fatalf("a grant done 14 s after the request of a 15 s lock answered %s, want {\"success\":false}", got)
	}
	if _, got := call(t, srv, "POST", lockPath, `{"resourceId":"frozen","lockOwner":"b","expiryInSeconds":15}`); !strings.Contains(got, `"success":true`) {
		t.Fatalf("the late grant was not released: another owner's lock = %s", got)
	}
}
