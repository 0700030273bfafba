package bench

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

func TestRunJob_FatalStopsTheBodyAndRunsCleanups(t *testing.T) {
	var order []string
	var dir string
	err := RunJob(context.Background(), "job", io.Discard, func(tb testing.TB) {
		dir = tb.TempDir()
		tb.Cleanup(func() { order = append(order, "first registered") })
		tb.Cleanup(func() { order = append(order, "second registered") })
		tb.Fatalf("boom %d", 1)
		order = append(order, "after Fatal")
	})
	if err == nil || !strings.Contains(err.Error(), "boom 1") {
		t.Fatalf("RunJob error = %v, want one quoting the Fatal message", err)
	}
	if len(order) != 2 || order[0] != "second registered" || order[1] != "first registered" {
		t.Errorf("cleanups ran as %v, want newest first and nothing after Fatal", order)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s still exists after the job", dir)
	}
}

func TestRunJob_CleanJobAndPanic(t *testing.T) {
	if err := RunJob(context.Background(), "ok", io.Discard, func(tb testing.TB) { tb.Logf("fine") }); err != nil {
		t.Errorf("clean job returned %v", err)
	}
	err := RunJob(context.Background(), "panics", io.Discard, func(testing.TB) { panic("oops") })
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("panicking job returned %v, want an error quoting the panic", err)
	}
}
