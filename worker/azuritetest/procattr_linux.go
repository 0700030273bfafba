package azuritetest

import "syscall"

// procAttr puts Azurite in its own process group (so Stop takes node and its
// children) and, on Linux, has the kernel kill it if the process that started
// it dies without calling Stop — a test binary killed on timeout must not
// leave a server behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
