package chaos

import (
	"context"
	"fmt"
)

// Reset resets one worker's storage connections: on the first data after the
// toxic is in place the connection is closed after Timeout (with SO_LINGER 0,
// i.e. an RST, on connections opened while the toxic is on). With Toxicity < 1
// only that share of connections is hit: random drops.
type Reset struct {
	Timeout  int64   `json:"timeout"`  // milliseconds between the first data and the reset
	Stream   Stream  `json:"stream"`   // upstream, downstream or both (default both)
	Toxicity float32 `json:"toxicity"` // probability (0..1] that a connection is reset; 0 means 1

	Proxy *Proxy `json:"-"`
	state poison
}

var _ Rerollable = (*Reset)(nil)

func (f *Reset) Kind() Kind     { return KindReset }
func (f *Reset) Target() string { return targetOf(f.Proxy) }

func (f *Reset) Inject(ctx context.Context) error {
	if f.Timeout < 0 {
		return fmt.Errorf("%w: timeout %d ms (want ≥ 0)", ErrInvalid, f.Timeout)
	}
	attrs := map[string]int64{"timeout": f.Timeout}
	return f.state.inject(ctx, f.Proxy, KindReset, "reset_peer", streamOr(f.Stream, Both), toxicityOr1(f.Toxicity), attrs)
}

func (f *Reset) Remove(ctx context.Context) error { return f.state.remove(ctx, f.Proxy) }

// Reroll puts the toxics back so open connections roll the dice again.
func (f *Reset) Reroll(ctx context.Context) error { return f.state.reroll(ctx, f.Proxy) }
