package azuritetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/stalltest"
)

func TestStart_ServesThenStopFreesThePort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		s.Stop()
		t.Fatalf("Azurite not listening on %s after Start: %v", addr, err)
	}
	c.Close()
	if e, ok := s.Exited(); ok {
		t.Fatalf("a running server reports it exited: %v", e)
	}
	s.Stop()
	s.Stop() // idempotent
	if e, ok := s.Exited(); !ok || !e.ByStop {
		t.Fatalf("after Stop: Exited() = %v, %v; want an exit by Stop", e, ok)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("something still listens on %s after Stop", addr)
	}
}

// A server killed by someone else says so, with its status, and Stop after
// it neither claims the exit nor signals the dead server's process group
// (its number may be another group's by then).
func TestExited_TellsAKillFromAStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		t.Fatal("the SIGKILLed server was not reaped within a minute")
	}
	s.Stop()
	e, ok := s.Exited()
	if !ok || e.ByStop || e.Status == nil || !strings.Contains(e.Status.Error(), "killed") {
		t.Fatalf("Exited() = %+v, %v; want a SIGKILL not by Stop", e, ok)
	}
	if !strings.Contains(e.String(), "not by Stop") {
		t.Errorf("Exit.String() = %q; want it to say the exit was not Stop's", e)
	}
}

func TestBinary_HonoursOverride(t *testing.T) {
	t.Setenv("AZURITE_BLOB", "/nonexistent/azurite-blob")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Start(ctx); err == nil {
		t.Fatal("Start with a missing binary succeeded")
	}
}

// A port found free can be taken before Azurite binds it (seen in make test:
// "listen EADDRINUSE" with several clusters starting at once). Start must then
// try another port instead of failing the test that asked for a server — and
// must not take the taker for Azurite when it answers HTTP too (seen in
// `go test -count=20 ./worker/...`: another package's status server took the
// port, answered "404 page not found", and a history test wrote to it).
func TestStart_TriesAnotherPortWhenTheFreeOneWasTaken(t *testing.T) {
	for _, taker := range []struct {
		name string
		take func(t *testing.T) int // the taken port, held until the test ends
	}{
		{name: "by a silent listener", take: func(t *testing.T) int { return listen(t, nil) }},
		{name: "by an HTTP server", take: func(t *testing.T) int {
			return listen(t, func(l net.Listener) { _ = http.Serve(l, http.NotFoundHandler()) })
		}},
		// Another Azurite (a developer's own, or another package's test
		// server) answers exactly as ours would: only the socket's owner
		// tells them apart.
		{name: "by another Azurite", take: func(t *testing.T) int {
			other := StartT(t)
			return other.Port
		}},
	} {
		t.Run(taker.name, func(t *testing.T) {
			stalltest.Run(t, func(t *testing.T, sp *stalltest.Probe) {
				takenPort := taker.take(t)
				picks := 0
				pick := func() (int, func(), error) {
					picks++
					if picks == 1 {
						return takenPort, func() {}, nil // what another process grabbed after the pick saw it free
					}
					return reservePort()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				began := time.Now()
				s, err := startOnReservedPort(ctx, pick, Options{})
				if err != nil && picks >= 2 && errors.Is(err, context.DeadlineExceeded) {
					// It did move on to a second port (the property); only the
					// second Node start outlasted the 60 s, which on a starved
					// machine proves nothing either way.
					sp.Starved(t, fmt.Sprintf("Start moved on to a second port, but its Azurite was not ready within 60 s: %v", err), began, time.Now(), time.Second)
				}
				if err != nil {
					t.Fatalf("Start gave up after the first port was taken: %v", err)
				}
				defer s.Stop()
				if s.Port == takenPort || picks != 2 {
					t.Fatalf("expected a second port after %d was taken; got port %d after %d picks", takenPort, s.Port, picks)
				}
			})
		})
	}
}

// listen takes a loopback port until the test ends; serve (nil: accept
// nothing, answer nothing) runs on it.
func listen(t *testing.T, serve func(net.Listener)) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if serve != nil {
		go serve(l)
	}
	return l.Addr().(*net.TCPAddr).Port
}

// With CheckAPIVersion, Azurite refuses an API version it does not know, as
// one started by hand without --skipApiVersionCheck does; by default it
// accepts it.
func TestStartWith_CheckAPIVersionRefusesAnUnknownVersion(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want int
	}{
		{Options{CheckAPIVersion: true}, http.StatusBadRequest},
		{Options{}, http.StatusForbidden}, // unsigned, but past the version check
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		s, err := StartWith(ctx, tt.opts)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, s.BlobEndpoint()+"?comp=list", nil)
		req.Header.Set("x-ms-version", "2099-01-01")
		resp, err := http.DefaultClient.Do(req)
		s.Stop()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Fatalf("%+v: an unknown API version got %d, want %d: %s", tt.opts, resp.StatusCode, tt.want, body)
		}
		if tt.opts.CheckAPIVersion && !strings.Contains(string(body), "InvalidHeaderValue") {
			t.Fatalf("the refusal does not say InvalidHeaderValue: %s", body)
		}
	}
}

// StartOnPort on a port another Azurite serves (a developer's own on
// 10000) must fail, not hand back a Server that is the other one: a test
// would write to, and Stop would not stop, a server it does not own.
func TestStartOnPort_RefusesAPortAnotherAzuriteServes(t *testing.T) {
	other := StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := StartOnPort(ctx, other.Port)
	if err == nil {
		s.Stop()
		t.Fatalf("StartOnPort(%d) returned a server while another Azurite (pid %d) serves that port", other.Port, other.Pid())
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("StartOnPort(%d) on another Azurite's port: %v; want it to say the port is taken", other.Port, err)
	}
	if _, gone := other.Exited(); gone {
		t.Fatal("the other Azurite exited: the refused start must leave it alone")
	}
}
