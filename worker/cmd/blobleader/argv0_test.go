package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The worker image has no shell and ACI's exec API runs one executable
// without arguments, so `/status` (a link to the binary) must print the
// worker's status on its own: the binary dispatches on the name it was
// started under.
func TestWorker_StartedAsStatusPrintsTheStatus(t *testing.T) {
	t.Parallel()
	const doc = `{"identity":"w1","role":"leader","term":4,"leader":"w1","leaseDuration":"15s","since":"2026-11-21T07:00:00Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, doc)
	}))
	defer srv.Close()
	dir := t.TempDir()
	link := filepath.Join(dir, "status")
	if err := os.Symlink(binary, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		argv []string // what exec gets; argv[0] is the path it runs
		env  []string
	}{
		{"through a symlink, no arguments", []string{link}, []string{"BLOBLEADER_URL=" + srv.URL}},
		{"with flags", []string{link, "--url", srv.URL}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, tc.argv[0], tc.argv[1:]...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.argv, err, out)
			}
			if strings.TrimSpace(string(out)) != doc {
				t.Fatalf("%v printed %q, want the worker's /status %s", tc.argv, out, doc)
			}
		})
	}
	// The same binary under its own name is still the worker (here: refusing
	// to start without storage, exit 2).
	if code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}); code != 2 || !strings.Contains(out, "--account-url") {
		t.Fatalf("blobleader without storage: exit %d, want 2 naming --account-url:\n%s", code, out)
	}
}

func TestArgsFor(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"/status", nil, "status"},
		{"status", []string{"--url", "http://x"}, "status --url http://x"},
		{"/blobleader", []string{"status"}, "status"},
		{"/blobleader", []string{"--tick", "1s"}, "--tick 1s"},
		{"./blobleader-linux-amd64", nil, ""},
		{"/usr/local/bin/status-page", nil, ""}, // only the exact name dispatches
	} {
		if got := strings.Join(argsFor(tc.argv0, tc.args), " "); got != tc.want {
			t.Errorf("argsFor(%q, %q) = %q, want %q", tc.argv0, tc.args, got, tc.want)
		}
	}
}
