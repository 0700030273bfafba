//go:build !linux

package supervise

import (
	"fmt"
	"syscall"
	"time"
)

// Group is a started command and its process group. Elsewhere than Linux it
// cannot be made: Start returns ErrUnsupported.
type Group struct{}

// EnableSubreaper returns ErrUnsupported elsewhere than Linux.
func EnableSubreaper() error { return ErrUnsupported }

// RunGuard fails elsewhere than Linux (no guard is ever started there).
func RunGuard() int { return 1 }

// IsShim is false elsewhere than Linux (no shim is ever started there).
func IsShim() bool { return false }

// RunShim fails elsewhere than Linux.
func RunShim() int { return 1 }

// Start returns ErrUnsupported elsewhere than Linux.
func Start(Spec) (*Group, error) { return nil, ErrUnsupported }

func (g *Group) Pid() int                                              { return 0 }
func (g *Group) Exited() <-chan struct{}                               { return nil }
func (g *Group) Status() ExitStatus                                    { return ExitStatus{} }
func (g *Group) Done() <-chan struct{}                                 { return nil }
func (g *Group) Signal(sig syscall.Signal) error                       { return ErrUnsupported }
func (g *Group) Stop(polite syscall.Signal, grace time.Duration) error { return ErrUnsupported }

func (g *Group) Cgroup() string      { return "" }
func (g *Group) Extend(time.Time)    {}
func (g *Group) ShimStopped() bool   { return false }
func (g *Group) ShimLost() bool      { return false }
func (g *Group) Running() bool       { return false }
func (g *Group) CheckReach() error   { return ErrUnsupported }
func (g *Group) KilledByGuard() bool { return false }

// GuardLost is nil elsewhere than Linux.
func (g *Group) GuardLost() <-chan GuardLoss { return nil }

func signalName(sig syscall.Signal) string { return fmt.Sprintf("signal %d", int(sig)) }

// CanKillAnyUser is false elsewhere than Linux.
func CanKillAnyUser() bool { return false }

// CheckReachable accepts everything elsewhere than Linux (Start refuses).
func CheckReachable(string) error { return nil }

// ProcForeign is false elsewhere than Linux (Start refuses anyway).
func ProcForeign() (string, bool) { return "", false }

// ProcHidden is false elsewhere than Linux (Start refuses anyway).
func ProcHidden() (string, bool) { return "", false }
