package azuritetest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestStart_ServesThenStopFreesThePort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		s.Stop()
		t.Fatalf("Azurite not listening on %s after Start: %v", addr, err)
	}
	c.Close()
	s.Stop()
	s.Stop() // idempotent
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("something still listens on %s after Stop", addr)
	}
}

func TestBinary_HonoursOverride(t *testing.T) {
	t.Setenv("AZURITE_BLOB", "/nonexistent/azurite-blob")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Start(ctx); err == nil {
		t.Fatal("Start with a missing binary succeeded")
	}
}
