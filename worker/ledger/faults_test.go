package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/storage"
)

// A fault injector between the SDK and Azurite: every request goes to the
// real storage over a real HTTP client, except the one a rule picks (the Nth
// request of one operation, as named by storage.WithOp), which it spoils in
// one of the ways a network does. Not a mock: storage answers everything it
// is sent, and what it applied stays applied.

type faultMode int

const (
	// failBeforeSend: the request never reaches storage (connection refused).
	failBeforeSend faultMode = iota
	// loseResponse: storage applies the request; the answer is lost.
	loseResponse
	// deliverLate: the caller gets an error at once; the request is held and
	// reaches storage just before the next request of the same operation
	// (an in-flight write that lands after its sender gave up on it).
	deliverLate
)

func (m faultMode) String() string {
	return [...]string{"fail before send", "lose response", "deliver late"}[m]
}

var errInjected = errors.New("injected fault")

type faultRule struct {
	op   string
	nth  int // 1-based count of requests of op
	mode faultMode
}

type injector struct {
	hc *http.Client

	mu    sync.Mutex
	rules []faultRule
	seen  map[string]int
	hits  []string      // "op#n mode", for failure messages
	held  *http.Request // a deliverLate request waiting for the next of its op
	heldN string
}

func newInjector() *injector {
	return &injector{hc: &http.Client{Timeout: 10 * time.Second}, seen: map[string]int{}}
}

// arm fails the nth next request of op (counted from now) in mode.
func (f *injector) arm(op string, nth int, mode faultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, faultRule{op: op, nth: f.seen[op] + nth, mode: mode})
}

// hit reports the faults injected so far.
func (f *injector) hit() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hits...)
}

func (f *injector) Do(req *http.Request) (*http.Response, error) {
	op := storage.Op(req.Context())
	f.mu.Lock()
	f.seen[op]++
	n := f.seen[op]
	var rule *faultRule
	for i := range f.rules {
		if f.rules[i].op == op && f.rules[i].nth == n {
			rule = &f.rules[i]
		}
	}
	late := f.held
	if late != nil && storage.Op(late.Context()) != op {
		late = nil
	}
	if late != nil {
		f.held = nil
	}
	if rule != nil {
		f.hits = append(f.hits, fmt.Sprintf("%s#%d %s", op, n, rule.mode))
	}
	f.mu.Unlock()

	if late != nil {
		resp, err := f.hc.Do(late)
		if err != nil {
			return nil, fmt.Errorf("deliver the held %s: %w", f.heldN, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if rule == nil {
		return f.hc.Do(req)
	}
	switch rule.mode {
	case failBeforeSend:
		return nil, fmt.Errorf("%w: %s #%d never sent", errInjected, op, n)
	case loseResponse:
		resp, err := f.hc.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s #%d sent, answer lost", errInjected, op, n)
	default: // deliverLate
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		// Detached from the caller's context: the sender has given up, the
		// network has not.
		held := req.Clone(storage.WithOp(context.Background(), op))
		held.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.held, f.heldN = held, fmt.Sprintf("%s #%d", op, n)
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s #%d timed out (held in flight)", errInjected, op, n)
	}
}

// newFaultyContainer is newContainer with the injector on every request.
func newFaultyContainer(t *testing.T) (*container.Client, *injector) {
	t.Helper()
	f := newInjector()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(),
		Container:        fmt.Sprintf("f%d-%d", time.Now().UnixNano()%1e9, seq.Add(1)),
		RequestTimeout:   5 * time.Second,
		Transport:        f,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}
