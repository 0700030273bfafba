package stalltest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A server that stops answering is a stall while the probe's ask waits —
// counted up to now before it is answered, and whole after — though the
// CPU probe wakes on time; fast answers are not.
func TestProbe_CountsTheServersSlowAnswers(t *testing.T) {
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		default:
			select {
			case held <- struct{}{}:
				<-hold // the first ask waits for the test; later ones are fast
			default:
			}
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
	p := Start(Config{Server: srv.URL})
	defer p.Stop()
	began := time.Now()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the storage probe asked nothing in 10 s")
	}
	heldAt := time.Now()
	time.Sleep(600 * time.Millisecond) // the server's stall, measured below
	if got := p.StallIn(began, time.Now()); got < 500*time.Millisecond {
		t.Errorf("while the ask waits: StallIn %v, want at least 500ms (the ask is awaited since %v)", got, time.Since(heldAt).Round(time.Millisecond))
	}
	close(hold)
	deadline := time.Now().Add(10 * time.Second)
	for p.Record().Asks < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the storage probe was not answered again in 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := p.Record()
	if len(r.Slow) != 1 || r.Slow[0].Late() < 550*time.Millisecond {
		t.Fatalf("slow answers %v; want the one held ≥600ms", r.Slow)
	}
	if got := p.StallIn(began, time.Now()); got < r.Slow[0].Late() {
		t.Errorf("after the answer: StallIn %v, below the slow answer's %v", got, r.Slow[0].Late())
	}
	if got := p.StallIn(r.Slow[0].Woke, r.Slow[0].Woke.Add(time.Hour)); got > 100*time.Millisecond {
		t.Errorf("StallIn after the stall ended %v; fast answers are no stall", got)
	}
	if !strings.Contains(r.String(), "; storage probe: ") {
		t.Errorf("summary %q names no storage probe", r.String())
	}
	t.Logf("%s", r)
}

// Without a Server there is no storage probe, and Stop ends it all.
func TestProbe_WithoutAServerAsksNothing(t *testing.T) {
	p := Start(Config{})
	time.Sleep(50 * time.Millisecond)
	p.Stop()
	if r := p.Record(); r.Asks != 0 || r.Server != "" || strings.Contains(r.String(), "storage") {
		t.Errorf("record %+v, %q: want no storage probe", r.Asks, r.String())
	}
}
