package azuritetest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// ReservePort returns a loopback TCP port for a process the test starts
// later (a worker's --listen, a sidecar's proxy), or where nothing is to
// listen (storage that refuses), held for the test until it ends. A port
// picked free (the kernel's port 0, then closed) is in its ephemeral range
// and unheld: any process may bind it, or use it as a connection's source
// port, before the test's process binds it. A reserved port is neither: on
// Linux it lies below the ephemeral range (ip_local_port_range), which the
// kernel never hands out by itself, and a lock file in the temporary
// directory keeps every other caller of ReservePort, in this process or
// another, off it while the test runs. Nothing listened on it when it was
// reserved. It fails the test when no port can be reserved.
func ReservePort(tb testing.TB) int {
	tb.Helper()
	p, release, err := reservePort()
	if err != nil {
		tb.Fatalf("reserve a port: %v", err)
	}
	tb.Cleanup(release)
	return p
}

// HoldPort reserves a port as ReservePort does, until release is called:
// for a program that starts servers without a test (the demo, a
// screenshot tool), or a port held for one process's life rather than a
// test's.
func HoldPort() (port int, release func(), err error) { return reservePort() }

func reservePort() (port int, release func(), err error) {
	lo, hi, ok := reservableRange()
	if !ok { // no range the kernel keeps off: the best there is
		p, err := freePort()
		return p, func() {}, err
	}
	const tries = 200
	for range tries {
		p := lo + rand.IntN(hi-lo)
		release, ok := lockPort(p)
		if !ok {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			return p, release, nil
		}
		release() // something outside the scheme listens there
	}
	return 0, nil, fmt.Errorf("none free in %d tries in [%d, %d)", tries, lo, hi)
}
