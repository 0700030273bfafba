//go:build !linux

package azuritetest

import "syscall"

// procAttr puts Azurite in its own process group so Stop takes node and its children.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
