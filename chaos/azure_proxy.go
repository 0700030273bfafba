package chaos

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Helpers for the chaos sidecar (chaos/sidecar), which runs one Proxy beside
// a worker in its Azure container group and applies the same fault types to
// it as the local cluster does.

// NewLoopbackProxy starts a proxy on listen, which must be a loopback
// address with a port (127.0.0.1:10443, [::1]:10443): the sidecar's proxy is
// reachable from inside its container group only. Port 0 picks a free port.
func NewLoopbackProxy(name, listen, upstream string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("%w: listen address %q: %v", ErrInvalid, listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: listen address %q is not a loopback IP (the proxy must not be reachable from outside)", ErrInvalid, listen)
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("%w: upstream %q: %v", ErrInvalid, upstream, err)
	}
	p := toxiproxy.NewProxy(apiServer(), name, listen, upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start proxy %s on %s: %w", name, listen, err)
	}
	return &Proxy{name: name, p: p}, nil
}

// Traffic is what a proxy carried since CountTraffic: bytes towards storage
// (Upstream) and back (Downstream). A worker that keeps contending moves
// Upstream every retry period.
type Traffic struct {
	Upstream   atomic.Int64
	Downstream atomic.Int64
}

// CountTraffic puts a pass-through counting toxic on both streams of p and
// returns the counters. Call it once, before any fault toxic.
func (p *Proxy) CountTraffic(ctx context.Context) (*Traffic, error) {
	tr := &Traffic{}
	id := fmt.Sprintf("%s/%d", p.name, toxicSeq.Add(1))
	counters.Store(id+"/upstream", &tr.Upstream)
	counters.Store(id+"/downstream", &tr.Downstream)
	for _, dir := range []Stream{Upstream, Downstream} {
		if _, err := p.addToxics(ctx, Kind("count"), countToxic, dir, 1, map[string]string{"counter": id + "/" + string(dir)}); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

const countToxic = "blobleader_count"

// counters maps a counting toxic's "counter" attribute to its counter.
var counters sync.Map

// countingToxic passes every chunk through unchanged, adding its size to the
// counter its attribute names.
type countingToxic struct {
	Counter string `json:"counter"`
}

func (t *countingToxic) Pipe(stub *toxics.ToxicStub) {
	var n *atomic.Int64
	if v, ok := counters.Load(t.Counter); ok {
		n = v.(*atomic.Int64)
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if n != nil {
				n.Add(int64(len(c.Data)))
			}
			stub.Output <- c
		}
	}
}

func init() { toxics.Register(countToxic, new(countingToxic)) }
