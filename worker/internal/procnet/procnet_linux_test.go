package procnet

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
)

// Our own listener and both ends of a connection to it are found, with the
// addresses the kernel gave them; a process that holds none of them (a
// child) sees none of them.
func TestTCP4_FindsTheListenerAndConnectionsAProcessHolds(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listen := netip.MustParseAddrPort(l.Addr().String())
	client := netip.MustParseAddrPort(c.LocalAddr().String())

	socks, err := TCP4(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := map[Socket]bool{
		{Local: listen, State: Listen, Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 0)}: false,
		{Local: client, Remote: listen, State: Established}:                                    false,
	}
	for _, s := range socks {
		if _, ok := want[s]; ok {
			want[s] = true
		}
	}
	for s, seen := range want {
		if !seen {
			t.Errorf("socket %+v not among ours: %+v", s, socks)
		}
	}

	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatalf("start a child to compare with: %v", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	theirs, err := TCP4(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range theirs {
		if s.Local == listen {
			t.Errorf("a child that holds no descriptor of ours was given our listener: %+v", s)
		}
	}
}

func TestTCP4_AnExitedProcessHoldsNothing(t *testing.T) {
	if _, err := TCP4(1 << 30); err == nil {
		t.Fatal("no error for a pid that does not exist")
	}
}
