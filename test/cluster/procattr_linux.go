package cluster

import "syscall"

// workerProcAttr puts a worker in its own process group (a terminal's ^C
// reaches the test, not the workers) and has the kernel SIGKILL it when the
// test process dies, however it ends — go test's -timeout panic, ^C, SIGKILL
// — so no worker outlives the test that started it (a timed-out `make chaos`
// left --shards workers re-parented to init for an hour).
//
// Pdeathsig fires when the thread that started the child exits; the Go
// runtime keeps its threads for the process's life unless a goroutine that
// locked one returns, which nothing here does.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
