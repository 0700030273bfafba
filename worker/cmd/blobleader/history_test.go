package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// An unusable --history file path is a configuration error (exit 2 naming
// the flag), found before the worker touches storage, and leaves nothing
// behind.
func TestWorker_UnusableHistoryPathExitsTwo(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
	}{
		{"directory missing", filepath.Join(dir, "missing", "h.jsonl")},
		{"is a directory", dir},
		{"parent is a file", filepath.Join(regular, "h.jsonl")},
	}
	if ro := readOnlyDir(t); ro != "" {
		tests = append(tests, struct{ name, path string }{"directory not writable", filepath.Join(ro, "h.jsonl")})
	} else {
		t.Log("no way to make a directory unwritable here (root without chattr): the not-writable case is not run")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectUsageError(t, nil, "--history", conn, "--history", tt.path)
			if _, err := os.Lstat(tt.path); err == nil && tt.path != dir {
				t.Fatalf("%s exists after a refused start: something was half-written", tt.path)
			}
		})
	}
	if b, err := os.ReadFile(regular); err != nil || string(b) != "keep\n" {
		t.Fatalf("%s changed: %q, %v", regular, b, err)
	}
}

// readOnlyDir returns a directory this process cannot create files in, or ""
// if it has no way to make one (root ignores modes; chattr +i stops root).
func readOnlyDir(t *testing.T) string {
	t.Helper()
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := exec.Command("chattr", "+i", ro).Run(); err != nil {
			return ""
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", ro).Run() })
	}
	probe := filepath.Join(ro, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err == nil {
		_ = os.Remove(probe)
		return ""
	}
	return ro
}
