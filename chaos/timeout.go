package chaos

import (
	"context"
	"fmt"
)

// Timeout black-holes one worker's storage connections: data on the poisoned
// streams is swallowed, and the connection is closed after Timeout (never when
// 0). On the downstream stream alone (the default) the request still reaches
// storage and takes effect there while its answer is lost — the ambiguous
// outcome a client must treat as "maybe".
type Timeout struct {
	Timeout  int64   `json:"timeout"`  // milliseconds until the connection is closed; 0 = hold it open forever
	Stream   Stream  `json:"stream"`   // upstream, downstream (default) or both
	Toxicity float32 `json:"toxicity"` // probability (0..1] that a connection is affected; 0 means 1

	Proxy *Proxy `json:"-"`
	state poison
}

var _ Rerollable = (*Timeout)(nil)

func (f *Timeout) Kind() Kind     { return KindTimeout }
func (f *Timeout) Target() string { return targetOf(f.Proxy) }

func (f *Timeout) Inject(ctx context.Context) error {
	if f.Timeout < 0 {
		return fmt.Errorf("%w: timeout %d ms (want ≥ 0)", ErrInvalid, f.Timeout)
	}
	attrs := map[string]int64{"timeout": f.Timeout}
	return f.state.inject(ctx, f.Proxy, KindTimeout, "timeout", streamOr(f.Stream, Downstream), toxicityOr1(f.Toxicity), attrs)
}

// Remove takes the toxics off; toxiproxy closes the connections they held, so
// the worker reconnects cleanly.
func (f *Timeout) Remove(ctx context.Context) error { return f.state.remove(ctx, f.Proxy) }

// Reroll puts the toxics back so open connections roll the dice again.
func (f *Timeout) Reroll(ctx context.Context) error { return f.state.reroll(ctx, f.Proxy) }
