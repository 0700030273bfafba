package azuritetest

import (
	"errors"
	"net/netip"

	"github.com/blobleader/blobleader/worker/internal/procnet"
)

// listensOn reports whether process pid holds the socket listening on
// 127.0.0.1:port. A process that exited (even one not yet reaped) holds
// nothing. known is false where the kernel's tables cannot be read (not
// Linux): the caller then has only the server's answer to go by.
func listensOn(pid, port int) (yes, known bool) {
	socks, err := procnet.TCP4(pid)
	if errors.Is(err, procnet.ErrUnsupported) {
		return false, false
	}
	want := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))
	for _, s := range socks {
		if s.State == procnet.Listen && s.Local == want {
			return true, true
		}
	}
	return false, true
}
