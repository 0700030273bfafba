package procnet

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// TCP4 returns the IPv4 TCP sockets process pid holds: the rows of its
// network namespace's table whose inode is one of its descriptors. A
// process that exited (even one not yet reaped) holds none; the error is
// then the kernel's.
func TCP4(pid int) ([]Socket, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	held := map[string]bool{} // socket inodes
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			held[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil, err
	}
	var socks []Socket
	// Rows: sl local_address rem_address st … inode (field 10).
	for _, row := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(row)
		if len(f) < 10 || !held[f[9]] {
			continue
		}
		local, err1 := parseAddr(f[1])
		remote, err2 := parseAddr(f[2])
		state, err3 := strconv.ParseUint(f[3], 16, 8)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("procnet: unreadable row of /proc/%d/net/tcp: %q", pid, row)
		}
		socks = append(socks, Socket{Local: local, Remote: remote, State: int(state)})
	}
	return socks, nil
}

// parseAddr reads the kernel's "0100007F:1F90": the address as one
// 32-bit word in host (little-endian) order, then the port, both hex.
func parseAddr(s string) (netip.AddrPort, error) {
	ip, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("no port in %q", s)
	}
	w, err := strconv.ParseUint(ip, 16, 32)
	if err != nil {
		return netip.AddrPort{}, err
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	addr := netip.AddrFrom4([4]byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24)})
	return netip.AddrPortFrom(addr, uint16(p)), nil
}
