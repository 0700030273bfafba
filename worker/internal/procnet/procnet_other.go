//go:build !linux

package procnet

// TCP4 cannot read a process's sockets here.
func TCP4(pid int) ([]Socket, error) { return nil, ErrUnsupported }
