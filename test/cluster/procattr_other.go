//go:build !linux

package cluster

import "syscall"

// workerProcAttr puts a worker in its own process group. Outside Linux there
// is no parent-death signal: a test killed hard can leave workers behind.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
