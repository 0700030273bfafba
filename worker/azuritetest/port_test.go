package azuritetest

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
)

// A reserved port is one the kernel does not hand out by itself (below the
// ephemeral range), nothing listens on it, no other reservation gets it
// while the test holds it, and the test's end gives it back.
func TestReservePort_HeldUntilTheTestEndsAndOutsideTheKernelsRange(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ports are reserved on Linux only; elsewhere ReservePort is a port picked free")
	}
	lo, hi, ok := reservableRange()
	if !ok {
		b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		t.Fatalf("no reservable range below the ephemeral range %q", b)
	}
	var port int
	t.Run("held", func(t *testing.T) {
		port = ReservePort(t)
		if port < lo || port >= hi {
			t.Fatalf("reserved %d, want it in [%d, %d): below the kernel's ephemeral range", port, lo, hi)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("the reserved port is not free to bind: %v", err)
		}
		l.Close()
		if release, ok := lockPort(port); ok {
			release()
			t.Fatalf("port %d was reserved twice while the first reservation held it", port)
		}
	})
	release, ok := lockPort(port)
	if !ok {
		t.Fatalf("port %d still held after the test that reserved it ended", port)
	}
	release()
}

// Azurite runs on a reserved port, held until Stop: another server that
// Start launches — in this process or another test binary's — cannot be
// given the same port, so a server that lost the bind (EADDRINUSE) is never
// mistaken for one that answers there (seen: a test ran against another
// package's Azurite until that one stopped).
func TestStart_ServerPortIsReservedUntilStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ports are reserved on Linux only")
	}
	ctx, cancel := startContext()
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, _ := reservableRange(); s.Port < lo || s.Port >= hi {
		s.Stop()
		t.Fatalf("Azurite on port %d, want a reserved one in [%d, %d)", s.Port, lo, hi)
	}
	if release, ok := lockPort(s.Port); ok {
		release()
		s.Stop()
		t.Fatalf("port %d of a running Azurite could be reserved again", s.Port)
	}
	s.Stop()
	release, ok := lockPort(s.Port)
	if !ok {
		t.Fatalf("port %d still reserved after Stop", s.Port)
	}
	release()
}
