package election

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// Leading answers for the leadership a task runs for, at the moment of
// asking: true while it holds, false once it lapsed (even if the elector
// leads again under a later term), false for any other context.
func TestLeading_AnswersForTheTaskLeadershipOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if Leading(context.Background()) {
			t.Fatal("Leading is true for a context no leader task was given")
		}
		store := electiontest.NewStore()
		var mu sync.Mutex
		tasks := map[int64]context.Context{}
		release := make(chan struct{})
		defer close(release)
		a := start(t, store, testConfig("a"), Callbacks{OnStartedLeading: func(ctx context.Context, term int64) error {
			mu.Lock()
			tasks[term] = ctx
			mu.Unlock()
			<-release // a task that outlives its leadership
			return nil
		}})
		synctest.Wait()
		taskCtx := func(term int64) context.Context {
			mu.Lock()
			defer mu.Unlock()
			return tasks[term]
		}
		first := taskCtx(1)
		if first == nil || !Leading(first) {
			t.Fatal("Leading is false for the task of the leadership just won")
		}
		// Renews hang: the leadership lapses at its deadline.
		a.lock.SetFault(hang("renew"))
		time.Sleep(testConfig("a").RenewDeadline)
		synctest.Wait()
		if Leading(first) {
			t.Fatal("Leading is still true after the renew deadline passed")
		}
		a.lock.SetFault(nil)
		// The elector wins again (term 2) while the first task still runs.
		time.Sleep(time.Minute)
		synctest.Wait()
		second := taskCtx(2)
		if second == nil || !a.e.IsLeader() {
			t.Fatal("the elector did not lead again under term 2")
		}
		if Leading(first) {
			t.Fatal("Leading answers for term 2 to the task of term 1")
		}
		if !Leading(second) {
			t.Fatal("Leading is false for the task of term 2")
		}
	})
}
