package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// On a full file system (/dev/full: every write fails with ENOSPC) the
// supervisor's stdout, stderr and --history lose every line; it must run on
// as if nothing happened, and count each lost line in the dropped counters,
// which /metrics shows (the one signal left).
func TestRun_AFullFilesystemCountsEveryLostLine(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	cmd := exec.Command(binary, "run", "--identity", "full", "--listen", anyPort, "--history", "/dev/full",
		"--container", "run-full", "--log-format", "json", "--", "sleep", "60")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString())
	cmd.Stdout, cmd.Stderr = full, full
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := listeningURL(t, "supervisor full", cmd.Process.Pid) // its log is lost to /dev/full
	counter := func(body, name string) float64 {
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return -1
	}
	var logs, hist float64
	waitFor(t, "on a full file system, the child running and every lost log and history record counted", 20*time.Second, func() (bool, string) {
		code, body := getURL(base + "/metrics")
		logs, hist = counter(body, "blobleader_log_records_dropped_total"), counter(body, "blobleader_history_records_dropped_total")
		running := counter(body, "blobleader_child_running")
		return code == 200 && running == 1 && logs > 0 && hist > 0, fmt.Sprintf("/metrics %d, child running %v, log records dropped %v, history records dropped %v",
			code, running, logs, hist)
	})
	t.Logf("on a full file system: %v log records and %v history records counted as dropped", logs, hist)
}
