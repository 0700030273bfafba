package azuritetest

import (
	"fmt"
	"os"
	"strings"
)

// listensOn reports whether process pid holds the socket listening on
// 127.0.0.1:port: its descriptors matched against the kernel's table of
// TCP sockets. A process whose descriptors cannot be read (it exited,
// and may be a zombie not yet reaped) holds nothing. known is always true
// here (see owner_other.go).
func listensOn(pid, port int) (yes, known bool) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, true
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
		return false, true
	}
	// Rows: sl local_address rem_address st … inode (field 10); st 0A is
	// LISTEN; 127.0.0.1:port is "0100007F:%04X" (address little-endian).
	local := fmt.Sprintf("0100007F:%04X", port)
	for _, row := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(row)
		if len(f) >= 10 && f[1] == local && f[3] == "0A" && held[f[9]] {
			return true, true
		}
	}
	return false, true
}
