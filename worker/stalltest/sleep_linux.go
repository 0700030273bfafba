package stalltest

import (
	"syscall"
	"time"
)

// sleep blocks the calling thread in the kernel for d (nanosleep): the CPU
// probe's wake is then the kernel scheduler's, not the Go runtime's timer.
// An interrupted sleep ends early; the probe measures its wake all the same.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_ = syscall.Nanosleep(&ts, nil)
}
