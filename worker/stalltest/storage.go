package stalltest

import (
	"context"
	"net/http"
	"time"
)

// The storage probe: a CPU probe's thread sleeps and is favoured by the
// kernel's scheduler when it wakes, so on an overloaded machine it reads
// far less than a busy process suffers — and an emulator (Azurite: one
// Node event loop) that gets a tenth of a core answers seconds late while
// the CPU probe wakes nearly on time. Given Config.Server, a probe also
// asks that server one GET at a time and counts every answer slower than
// StorageFloor as a stall, [sent + StorageFloor, answered], the one still
// awaited up to now: a starved emulator delays every storage step of a
// bound as a starved thread does (test/cluster's StorageProbe does the
// same for the chaos harness).

// StorageFloor is the answer time above which storage counts as stalled:
// Azurite answers an unsigned GET in a few milliseconds when it is run.
const StorageFloor = 20 * time.Millisecond

// storageEvery is the storage probe's rhythm (a slow answer delays the
// next ask), and storageTimeout one ask's bound: long enough to measure a
// long stall whole.
const (
	storageEvery   = 250 * time.Millisecond
	storageTimeout = 30 * time.Second
)

func (p *Probe) askLoop(ctx context.Context) {
	defer close(p.asked)
	// Its own connection, kept alive: the probe measures the server, not a
	// handshake or another client's pool.
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: storageTimeout, Transport: tr}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		sent := time.Now()
		p.mu.Lock()
		p.asking = sent
		p.mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.Server, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				// Any answer (Azurite says 403 to an unsigned GET) proves
				// the server's loop served it.
				resp.Body.Close()
			}
		}
		if ctx.Err() != nil {
			return // stopped mid-ask: not a measurement
		}
		p.answered(sent, time.Now())
		timer.Reset(max(0, storageEvery-time.Since(sent)))
	}
}

// answered records one ask: sent at sent, answered (or failed) at at.
func (p *Probe) answered(sent, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asking = time.Time{}
	p.asks++
	if at.Sub(sent) <= StorageFloor {
		return
	}
	w := Wake{Due: sent.Add(StorageFloor), Woke: at}
	p.slowTotal += w.Late()
	if len(p.slow) < p.cfg.Keep {
		p.slow = append(p.slow, w)
		return
	}
	p.slow[p.slowNext] = w
	p.slowNext = (p.slowNext + 1) % len(p.slow)
}

// stalls returns every kept stall, the CPU's and storage's, with the ask
// still awaited counted up to now. Callers hold p.mu.
func (p *Probe) stalls() []Wake {
	if p.cfg.Server == "" {
		return p.ring
	}
	out := append(append([]Wake(nil), p.ring...), p.slow...)
	if !p.asking.IsZero() {
		if due := p.asking.Add(StorageFloor); time.Now().After(due) {
			out = append(out, Wake{Due: due, Woke: time.Now()})
		}
	}
	return out
}
