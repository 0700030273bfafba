//go:build !linux

package cluster

import "time"

// sleep is time.Sleep where nanosleep is not wrapped.
func sleep(d time.Duration) { time.Sleep(d) }
