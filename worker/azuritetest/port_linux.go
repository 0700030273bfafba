package azuritetest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// reservableRange is where ReservePort picks: from 20000 up to the start
// of the kernel's ephemeral range, when that leaves room.
func reservableRange() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	var ephLo, ephHi int
	if _, err := fmt.Sscan(string(b), &ephLo, &ephHi); err != nil {
		return 0, 0, false
	}
	const lowest = 20000 // above the well-known and registered services tests meet (Azurite's 10000…)
	if ephLo-lowest < 1000 {
		return 0, 0, false
	}
	return lowest, ephLo, true
}

// lockPort takes port's lock file without waiting; release gives it back.
// The files stay (removing one would let two holders lock two files of one
// name); there is at most one per port.
func lockPort(port int) (release func(), ok bool) {
	dir := filepath.Join(os.TempDir(), "blobleader-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true // closing the file drops the lock
}
