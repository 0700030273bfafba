// Package azuritetest starts and stops a private, in-memory Azurite blob service on a
// reserved loopback port (ReservePort: held until Stop), for tests, the demo and the benchmarks — and for the
// integration tests of services that use the library (like net/http/httptest).
//
// On Linux, a process that may raise priorities (root, CAP_SYS_NICE) runs
// the server at nice -10: the emulator stands for a storage service with
// machines of its own, and a busy test machine must not starve it before
// the code under test (priority_linux.go).
//
// The binary comes from the repository's pinned npm install (node_modules/.bin,
// made by `make node_modules`), or from $AZURITE_BLOB when set. Nothing here
// talks to anything but 127.0.0.1.
package azuritetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Well-known Azurite development account (public, documented by Microsoft; not a secret).
const (
	Account    = "devstoreaccount1"
	AccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// ErrNotInstalled means no azurite-blob binary was found; run `make node_modules`.
var ErrNotInstalled = errors.New("azurite: azurite-blob not found (run `make node_modules`, or set AZURITE_BLOB)")

// Server is one running Azurite blob service.
type Server struct {
	Host string // always 127.0.0.1
	Port int

	cmd     *exec.Cmd
	out     *syncBuffer
	done    chan struct{}
	err     error     // exit status, valid after done is closed
	end     time.Time // when it exited, valid after done is closed
	once    sync.Once
	release func() // gives back the reserved port (Stop); nil for StartOnPort
	// stopping is set by Stop before its kill: an exit after it is Stop's.
	stopping atomic.Bool
}

// Exit is how a server ended.
type Exit struct {
	At     time.Time // when its process was reaped
	Status error     // the wait status (nil: exit 0; "signal: killed": a SIGKILL)
	ByStop bool      // Stop ended it; otherwise it crashed or someone else killed it
}

// String is e in one line, e.g. "exited at 01:32:46.652 (signal: killed), not by Stop".
func (e Exit) String() string {
	status := "exit status 0"
	if e.Status != nil {
		status = e.Status.Error()
	}
	by := "by Stop"
	if !e.ByStop {
		by = "not by Stop: it crashed, or something else killed it"
	}
	return fmt.Sprintf("exited at %s (%s), %s", e.At.Format("15:04:05.000"), status, by)
}

// Exited reports how the server ended, and false while it runs.
func (s *Server) Exited() (Exit, bool) {
	select {
	case <-s.done:
		return Exit{At: s.end, Status: s.err, ByStop: s.stopping.Load()}, true
	default:
		return Exit{}, false
	}
}

// Binary finds azurite-blob: $AZURITE_BLOB, then node_modules/.bin in this
// directory or any parent (so tests run from any package directory find it).
func Binary() (string, error) {
	if p := os.Getenv("AZURITE_BLOB"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "node_modules", ".bin", "azurite-blob")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotInstalled
		}
		dir = parent
	}
}

// Start launches Azurite on a reserved loopback port (held until Stop) and
// returns once it answers HTTP, or fails when ctx ends first.
func Start(ctx context.Context) (*Server, error) {
	return startOnReservedPort(ctx, reservePort, Options{})
}

// Options change how Azurite runs; the zero value is Start's local mode.
type Options struct {
	// CheckAPIVersion starts Azurite without --skipApiVersionCheck, as a
	// user who starts it by hand without the flag does: every request with
	// an API version it does not know (the SDK's is newer) is answered
	// 400 InvalidHeaderValue.
	CheckAPIVersion bool
}

// StartWith is Start with opts.
func StartWith(ctx context.Context, opts Options) (*Server, error) {
	return startOnReservedPort(ctx, reservePort, opts)
}

// errPortTaken: the picked port is another process's — Azurite could not
// bind it (EADDRINUSE), or another server answers on it.
var errPortTaken = errors.New("azurite: port taken")

// startOnReservedPort starts Azurite on a port pick reserves (reservePort:
// held until Stop, so no other server Start launches, in any process, is
// given it while this one runs). A process outside that scheme can still
// take the port between the check and Azurite's bind, so a port found
// taken is replaced by a fresh pick, a few times.
func startOnReservedPort(ctx context.Context, pick func() (int, func(), error), opts Options) (*Server, error) {
	var err error
	for range 5 {
		port, release, perr := pick()
		if perr != nil {
			return nil, perr
		}
		var s *Server
		s, err = startOnPort(ctx, port, opts)
		if err == nil {
			s.release = release
			return s, nil
		}
		release()
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

// StartOnPort launches Azurite on the given loopback port (10000 is the
// well-known one that "UseDevelopmentStorage=true" names).
func StartOnPort(ctx context.Context, port int) (*Server, error) {
	return startOnPort(ctx, port, Options{})
}

// startOnPort is StartOnPort with opts and extra Azurite flags (tests: --debug).
func startOnPort(ctx context.Context, port int, opts Options, extra ...string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", Port: port, out: &syncBuffer{}, done: make(chan struct{})}
	// The flags of the local mode: in-memory, loopback only, and lenient about the
	// API version because the SDK sends a newer one than Azurite knows.
	args := []string{"--blobHost", s.Host, "--blobPort", strconv.Itoa(port),
		"--inMemoryPersistence", "--loose", "--disableTelemetry"}
	if !opts.CheckAPIVersion {
		args = append(args, "--skipApiVersionCheck")
	}
	s.cmd = exec.Command(bin, append(args, extra...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	env, preload, err := withGCInterval(os.Environ())
	if err != nil {
		return nil, err
	}
	defer os.Remove(preload) // read by node at start only
	s.cmd.Env = env
	// Own process group, so Stop takes node and anything it forked with it.
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("azurite: start %s: %w", bin, err)
	}
	go func() { s.err = s.cmd.Wait(); s.end = time.Now(); close(s.done) }()
	prioritize(s.cmd.Process.Pid)
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	prioritize(s.cmd.Process.Pid) // the threads node started meanwhile
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 500 * time.Millisecond}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// Ready is Azurite's answer (403 for an unsigned request, with its
		// Server header) from a socket our process holds. Any other HTTP
		// answer means the port was free when picked but is another
		// process's server now: Azurite cannot bind it, and must not be
		// taken to be that server. Another Azurite's answer looks like
		// ours; only the socket's owner tells them apart, and ours then
		// exits on EADDRINUSE (below).
		if resp, err := client.Get(s.BlobEndpoint()); err == nil {
			resp.Body.Close()
			if server := resp.Header.Get("Server"); !strings.HasPrefix(server, "Azurite-Blob/") {
				return fmt.Errorf("%w: %d (answered by another server: %s, Server %q)", errPortTaken, s.Port, resp.Status, server)
			}
			if ours, known := listensOn(s.cmd.Process.Pid, s.Port); ours || !known {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("azurite: not ready on port %d: %w; output:\n%s", s.Port, context.Cause(ctx), s.out.String())
		case <-s.done:
			out := s.out.String()
			if strings.Contains(out, "EADDRINUSE") {
				return fmt.Errorf("%w: %d (exited before ready: %v); output:\n%s", errPortTaken, s.Port, s.err, out)
			}
			return fmt.Errorf("azurite: exited before ready (%v); output:\n%s", s.err, out)
		case <-tick.C:
		}
	}
}

// BlobEndpoint is the account's blob URL, e.g. http://127.0.0.1:10000/devstoreaccount1.
func (s *Server) BlobEndpoint() string {
	return fmt.Sprintf("http://%s:%d/%s", s.Host, s.Port, Account)
}

// ConnectionString is the connection string for this server.
func (s *Server) ConnectionString() string { return ConnectionString(s.BlobEndpoint()) }

// ConnectionString builds an Azurite connection string for a blob endpoint,
// which may be a proxy in front of the server.
func ConnectionString(blobEndpoint string) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;",
		Account, AccountKey, blobEndpoint)
}

// Output returns what Azurite printed so far (for failure messages).
func (s *Server) Output() string { return s.out.String() }

// Pid is the Azurite process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop kills the server's process group and waits for it to exit. Safe to call twice.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.release != nil {
			defer s.release() // the port, once the server is gone
		}
		select {
		case <-s.done:
			return // reaped: its group's number may be another's by now
		default:
		}
		s.stopping.Store(true)
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// freePort asks the kernel for a free loopback TCP port: unheld, so only
// the fallback of a system without a reservable range (reservePort).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep the last 64 KiB: enough for a failure message, bounded for long runs.
	if b.b.Len() > 64<<10 {
		tail := append([]byte(nil), b.b.Bytes()[b.b.Len()-32<<10:]...)
		b.b.Reset()
		b.b.Write(tail)
	}
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
