package chaos

import (
	"context"
	"fmt"
)

// Latency delays the data of one worker's storage connections: slow storage
// or a slow network.
type Latency struct {
	Latency  int64   `json:"latency"`  // milliseconds added to each chunk, per poisoned stream
	Jitter   int64   `json:"jitter"`   // milliseconds, ± around Latency
	Stream   Stream  `json:"stream"`   // upstream, downstream or both (default both: a round trip gains 2×Latency)
	Toxicity float32 `json:"toxicity"` // probability (0..1] that a connection is affected; 0 means 1

	Proxy *Proxy `json:"-"`
	state poison
}

var _ Rerollable = (*Latency)(nil)

func (f *Latency) Kind() Kind     { return KindLatency }
func (f *Latency) Target() string { return targetOf(f.Proxy) }

func (f *Latency) Inject(ctx context.Context) error {
	if f.Latency < 0 || f.Jitter < 0 || f.Jitter > f.Latency {
		return fmt.Errorf("%w: latency %d ms, jitter %d ms (want 0 ≤ jitter ≤ latency)", ErrInvalid, f.Latency, f.Jitter)
	}
	attrs := map[string]int64{"latency": f.Latency, "jitter": f.Jitter}
	return f.state.inject(ctx, f.Proxy, KindLatency, "latency", streamOr(f.Stream, Both), toxicityOr1(f.Toxicity), attrs)
}

func (f *Latency) Remove(ctx context.Context) error { return f.state.remove(ctx, f.Proxy) }

// Reroll puts the toxics back so open connections roll the dice again.
func (f *Latency) Reroll(ctx context.Context) error { return f.state.reroll(ctx, f.Proxy) }
