package chaos

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestOffline_LoopbackProxyRefusesNonLoopbackAddresses(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:10443", ":10443", "10.0.0.4:10443", "[::]:10443", "localhost:10443", "127.0.0.1"} {
		if p, err := NewLoopbackProxy("x", listen, "127.0.0.1:1"); !errors.Is(err, ErrInvalid) {
			if p != nil {
				p.Close()
			}
			t.Errorf("NewLoopbackProxy(%q): %v, want ErrInvalid", listen, err)
		}
	}
	if _, err := NewLoopbackProxy("x", "127.0.0.1:0", "no-port"); !errors.Is(err, ErrInvalid) {
		t.Errorf("upstream without a port: %v, want ErrInvalid", err)
	}
}

// The counting toxic sees every byte in each direction and changes none.
func TestOffline_CountTrafficCountsBothDirections(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	p, err := NewLoopbackProxy("count-test", "127.0.0.1:0", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr, err := p.CountTraffic(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg := []byte("renew leader lease, please")
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != string(msg) {
		t.Fatalf("echo through the counting proxy: %q, %v", got, err)
	}
	if up, down := tr.Upstream.Load(), tr.Downstream.Load(); up != int64(len(msg)) || down != int64(len(msg)) {
		t.Fatalf("counted %d up, %d down; want %d each", up, down, len(msg))
	}
}
