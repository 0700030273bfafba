//go:build azure

package azure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// AlertScenario is one scenario of the alerts stage: what it does to the
// deployment, and the rules that must fire over its time (every other rule
// must stay quiet).
type AlertScenario struct {
	Name  string
	Fires []string
	Run   func(ctx context.Context, c *Cluster, p AlertParams) error
}

// AlertScenarios are run in this order on one deployment.
func AlertScenarios() []AlertScenario {
	return []AlertScenario{
		// A deployment left alone: every rule quiet.
		{Name: "Quiet", Run: func(ctx context.Context, _ *Cluster, _ AlertParams) error { return sleepCtx(ctx, 5*time.Minute) }},
		// Every worker killed until well past the no-leader gap, then back.
		{Name: "EveryWorkerKilled", Fires: []string{"no_leader"}, Run: everyWorkerKilled},
		// More leaders in a window than the flapping threshold allows: an
		// operator breaks the lease again and again.
		{Name: "LeadershipFlaps", Fires: []string{"flapping"}, Run: leadershipFlaps},
	}
}

// everyWorkerKilled stops every group (ARM, as the crash fault does), keeps
// them down for the no-leader gap and a minute more, starts them again and
// waits for a leader.
func everyWorkerKilled(ctx context.Context, c *Cluster, p AlertParams) error {
	ws := c.Workers()
	crashes := make([]*chaos.Crash, len(ws))
	for i := range crashes {
		crashes[i] = &chaos.Crash{Restart: true}
	}
	if err := each(len(ws), func(i int) error { return c.Inject(ctx, crashes[i], ws[i]) }); err != nil {
		return err
	}
	if err := sleepCtx(ctx, time.Duration(p.GapSeconds*float64(time.Second))+time.Minute); err != nil {
		return err
	}
	if err := each(len(ws), func(i int) error { return c.Remove(ctx, crashes[i]) }); err != nil {
		return err
	}
	_, err := c.FindLeader(10 * time.Minute)
	return err
}

// leadershipFlaps breaks the lease flapping_handovers + 1 times, each time
// once a leader of a new term holds it.
func leadershipFlaps(ctx context.Context, c *Cluster, p AlertParams) error {
	var term int64
	for i := 0; i <= p.FlappingHandovers; i++ {
		t, err := leaderAbove(ctx, c, term, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("break %d: %w", i+1, err)
		}
		term = t
		brk := &chaos.BreakLease{}
		if err := c.Inject(ctx, brk, nil); err != nil {
			return err
		}
		if err := c.Remove(ctx, brk); err != nil {
			return err
		}
	}
	_, err := leaderAbove(ctx, c, term, 2*time.Minute)
	return err
}

// leaderAbove waits for a worker that leads a term above term and returns
// that term.
func leaderAbove(ctx context.Context, c *Cluster, term int64, within time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		for _, w := range c.Workers() {
			if st, err := w.Status(ctx); err == nil && st.Role == "leader" && st.Term > term {
				return st.Term, nil
			}
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return 0, fmt.Errorf("no leader of a term above %d within %v", term, within)
		}
	}
}

// each runs f(0..n-1) at once and joins their errors.
func each(n int, f func(int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}
