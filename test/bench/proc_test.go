package bench

import (
	"os"
	"testing"
)

func TestParseStatCPU_CommandWithSpaces(t *testing.T) {
	line := []byte("1234 (node (azurite) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0 100 0 0\n")
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.0 {
		t.Errorf("CPU = %v s, want 3 (250+50 ticks at 100 Hz)", got)
	}
}

func TestCPUSecondsAndRSS_Self(t *testing.T) {
	pid := os.Getpid()
	if _, err := CPUSeconds(pid); err != nil {
		t.Errorf("CPUSeconds(self): %v", err)
	}
	rss, err := RSSBytes(pid)
	if err != nil || rss <= 0 {
		t.Errorf("RSSBytes(self) = %d, %v; want a positive size", rss, err)
	}
}

func TestFlagValue(t *testing.T) {
	args := []string{"worker", "--identity", "w1", "--listen=127.0.0.1:1", "--listen", "127.0.0.1:2"}
	if got := flagValue(args, "--identity"); got != "w1" {
		t.Errorf("--identity = %q", got)
	}
	if got := flagValue(args, "--listen"); got != "127.0.0.1:2" {
		t.Errorf("--listen = %q, want the last value", got)
	}
	if got := flagValue(args, "--history"); got != "" {
		t.Errorf("missing flag = %q, want empty", got)
	}
}
