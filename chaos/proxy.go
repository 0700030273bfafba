package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Stream says which direction of a connection a toxic poisons: Upstream is
// client → storage (the request), Downstream is storage → client (the answer).
// A toxic on Downstream alone still lets the request reach storage and take
// effect there; only Upstream (or Both) stops it.
type Stream string

// The streams a network fault can poison.
const (
	Upstream   Stream = "upstream"
	Downstream Stream = "downstream"
	Both       Stream = "both"
)

func (s Stream) directions() ([]string, error) {
	switch s {
	case Upstream, Downstream:
		return []string{string(s)}, nil
	case Both:
		return []string{string(Upstream), string(Downstream)}, nil
	}
	return nil, fmt.Errorf("%w: stream %q (want upstream, downstream or both)", ErrInvalid, s)
}

// One toxiproxy API server holds the shared logger and (disabled) metrics every
// proxy needs; it never listens on a port.
var (
	serverOnce sync.Once
	server     *toxiproxy.ApiServer
	toxicSeq   atomic.Int64
)

func apiServer() *toxiproxy.ApiServer {
	serverOnce.Do(func() {
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	return server
}

// Proxy is an in-process TCP proxy (toxiproxy) between one worker and
// storage. The worker is pointed at Addr instead of the storage endpoint; the
// network faults poison or cut the proxy.
type Proxy struct {
	name string
	p    *toxiproxy.Proxy
	mu   sync.Mutex // serialises Enable/Disable/Close
}

// NewProxy starts a proxy on a free 127.0.0.1 port that forwards to upstream
// (host:port).
func NewProxy(name, upstream string) (*Proxy, error) {
	p := toxiproxy.NewProxy(apiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start proxy %s: %w", name, err)
	}
	return &Proxy{name: name, p: p}, nil
}

// Name is the proxy's name (the worker it serves).
func (p *Proxy) Name() string { return p.name }

// Addr is the host:port the proxy listens on; it stays the same across
// Disable/Enable.
func (p *Proxy) Addr() string {
	p.p.Lock()
	defer p.p.Unlock()
	return p.p.Listen
}

// Upstream is the host:port the proxy forwards to.
func (p *Proxy) Upstream() string { return p.p.Upstream }

// Enabled reports whether the proxy accepts connections.
func (p *Proxy) Enabled() bool {
	p.p.Lock()
	defer p.p.Unlock()
	return p.p.Enabled
}

// Disable closes the listener and every open connection: new connections are
// refused until Enable.
func (p *Proxy) Disable(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return run(ctx, func() error { p.p.Stop(); return nil })
}

// Enable listens again on the same address.
func (p *Proxy) Enable(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return run(ctx, func() error {
		if p.Enabled() {
			return nil
		}
		in := &toxiproxy.Proxy{Listen: p.Addr(), Upstream: p.p.Upstream, Enabled: true}
		if err := p.p.Update(in); err != nil {
			return fmt.Errorf("chaos: enable proxy %s: %w", p.name, err)
		}
		return nil
	})
}

// Close removes every toxic and stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Toxics.ResetToxics(context.Background())
	p.p.Stop()
}

// Toxics lists the names of the toxics on the proxy (for tests and reports).
func (p *Proxy) Toxics() []string {
	var names []string
	for _, t := range p.p.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			names = append(names, w.Name)
		}
	}
	return names
}

// toxic is the JSON toxiproxy takes for one toxic on one stream.
type toxic struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Stream     string  `json:"stream"`
	Toxicity   float32 `json:"toxicity"`
	Attributes any     `json:"attributes"`
}

// addToxics puts one toxic of the given type on each direction of s and
// returns their names. It adds all or nothing.
func (p *Proxy) addToxics(ctx context.Context, kind Kind, typ string, s Stream, toxicity float32, attrs any) ([]string, error) {
	dirs, err := s.directions()
	if err != nil {
		return nil, err
	}
	if toxicity < 0 || toxicity > 1 {
		return nil, fmt.Errorf("%w: toxicity %v (want 0..1)", ErrInvalid, toxicity)
	}
	var names []string
	for _, dir := range dirs {
		t := toxic{
			Name:     fmt.Sprintf("%s_%s_%d", kind, dir, toxicSeq.Add(1)),
			Type:     typ,
			Stream:   dir,
			Toxicity: toxicity,
			// toxiproxy reads attributes into the toxic's own struct.
			Attributes: attrs,
		}
		body, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		err = p.addToxic(ctx, t.Name, body)
		if err != nil {
			_ = p.removeToxics(context.WithoutCancel(ctx), names)
			return nil, fmt.Errorf("chaos: proxy %s: add %s toxic on %s: %w", p.name, typ, dir, err)
		}
		names = append(names, t.Name)
	}
	return names, nil
}

// addToxic adds one toxic. If ctx ends before toxiproxy is done, the toxic is
// taken off again as soon as the add completes, so nothing untracked stays.
func (p *Proxy) addToxic(ctx context.Context, name string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				_ = p.p.Toxics.RemoveToxic(context.Background(), name)
			}
		}()
		return ctx.Err()
	}
}

// removeToxics takes the named toxics off; names already gone are ignored.
func (p *Proxy) removeToxics(ctx context.Context, names []string) error {
	for _, name := range names {
		err := run(ctx, func() error {
			if p.p.Toxics.GetToxic(name) == nil {
				return nil
			}
			return p.p.Toxics.RemoveToxic(ctx, name)
		})
		if err != nil {
			return fmt.Errorf("chaos: proxy %s: remove toxic %s: %w", p.name, name, err)
		}
	}
	return nil
}
