//go:build !linux

package stalltest

import "time"

// sleep is time.Sleep where nanosleep is not wrapped.
func sleep(d time.Duration) { time.Sleep(d) }
