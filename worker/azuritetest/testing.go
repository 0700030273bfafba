package azuritetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// StartT starts Azurite for one test and stops it when the test ends.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	return StartWithT(tb, Options{})
}

// StartWithT is StartT with opts.
func StartWithT(tb testing.TB, opts Options) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := StartWith(ctx, opts)
	if err != nil {
		tb.Fatalf("this test needs Azurite: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// RunMain is a TestMain for packages whose tests share one Azurite: it starts
// it, stores it in *s, runs the tests, stops it and exits. Without Azurite the
// package fails (it does not skip: a skipped storage test proves nothing).
func RunMain(m *testing.M, s **Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "these tests need Azurite:", err)
		os.Exit(1)
	}
	*s = srv
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}
