package chaos

import (
	"testing"
	"time"
)

func TestProxy_ForwardsAndCanBeDisabled(t *testing.T) {
	_, px := fixtureStorage(t)
	via := containerVia(t, px.Addr(), containerName(t))
	// A container we did not create answers 404 through the proxy: storage
	// was reached.
	if err := probe(ctxT(t, 5*time.Second), via); err == nil {
		t.Fatal("probe of a missing container succeeded")
	}
	addr := px.Addr()
	if err := px.Disable(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if px.Enabled() {
		t.Fatal("disabled proxy reports enabled")
	}
	if d, err := timedProbe(via, 2*time.Second); err == nil || d > time.Second {
		t.Fatalf("through a disabled proxy: %v after %v, want a fast connection error", err, d)
	}
	if err := px.Enable(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if px.Addr() != addr {
		t.Fatalf("re-enabled proxy moved from %s to %s", addr, px.Addr())
	}
}

func TestStream_Directions(t *testing.T) {
	for _, tc := range []struct {
		name    Stream
		want    int
		wantErr bool
	}{
		{Upstream, 1, false}, {Downstream, 1, false}, {Both, 2, false}, {"sideways", 0, true},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			d, err := tc.name.directions()
			if (err != nil) != tc.wantErr || len(d) != tc.want {
				t.Fatalf("directions(%q) = %v, %v", tc.name, d, err)
			}
		})
	}
}
