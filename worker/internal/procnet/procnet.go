// Package procnet reads which IPv4 TCP sockets a process holds from the
// kernel's tables (Linux /proc): tests use it to tell a server's own
// listener from another process's on the same port, and to read back the
// address a process bound when its log cannot be read. Elsewhere it
// reports ErrUnsupported.
package procnet

import (
	"errors"
	"net/netip"
)

// ErrUnsupported: this system has no /proc socket tables.
var ErrUnsupported = errors.New("procnet: socket tables are read from Linux /proc only")

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	Established = 0x01
	Listen      = 0x0A
)

// Socket is one IPv4 TCP socket.
type Socket struct {
	Local, Remote netip.AddrPort
	State         int // Established, Listen, …
}
