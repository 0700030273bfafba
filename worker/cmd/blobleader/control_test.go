package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// A stop asked for on the loopback control endpoint (--control-listen, what
// the chaos sidecar uses on Azure) is the graceful stop of a SIGTERM: the
// leader steps down, releases (history `released`) and exits 0.
func TestWorker_ControlStopIsAGracefulStop(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	dir := t.TempDir()
	hist := filepath.Join(dir, "w1.jsonl")
	base, cmd := startWorker(t, az.ConnectionString(), "w1", hist, "--control-listen", anyPort)
	control := startedAddr(t, "worker w1", fileLog(hist+".log"), controlStarted, "addr")
	awaitRole(t, base, "leader")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Only POST /stop acts.
	if resp, err := http.Get("http://" + control + "/stop"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /stop: %v %v, want 405", resp, err)
	}
	if resp, err := http.Post("http://"+control+"/other", "", nil); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /other: %v %v, want 404", resp, err)
	}
	if st := getStatus(t, base); st["role"] != "leader" {
		t.Fatalf("after GET /stop the worker is %v, want still leading", st)
	}
	resp, err := http.Post("http://"+control+"/stop", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /stop answered %s, want 202 Accepted", resp.Status)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("the worker exited %d after a control stop, want 0 (a clean stop)", ee.ExitCode())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not exit within 20s of POST /stop")
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"event":"released"`) {
		t.Fatalf("history after a control stop has no released event:\n%s", b)
	}
}

func TestWorker_ControlListenMustBeLoopback(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	for _, addr := range []string{"0.0.0.0:8081", ":8081", "example.com:8081", "127.0.0.1", "[::1]:x"} {
		code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, conn, "--control-listen", addr)
		if code != 2 || !strings.Contains(out, "--control-listen") {
			t.Errorf("--control-listen %q: exit %d, want 2 naming the flag:\n%s", addr, code, out)
		}
	}
}
