package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/internal/procnet"
)

// anyPort is the listen address the tests give the binary (--listen,
// --grpc-listen, --control-listen): port 0, so the kernel places the
// listener on a port nobody holds, and the test reads the address back from
// the process's start line (startedAddr). A port picked free beforehand and
// passed in can be taken by another process before the binary listens; the
// binary then exits 2 ("cannot listen on --listen") and the test fails on
// a race of the machine, not of the product.
const anyPort = "127.0.0.1:0"

// Start lines and the fields that carry each listener's address
// (docs/architecture.md#logs).
const (
	workerStarted   = "worker started"             // listen
	locksStarted    = "lock service started"       // listen, grpc_listen
	controlStarted  = "control endpoint listening" // addr
	startLineWithin = 10 * time.Second
)

// startedAddr waits (10 s plus the measured stall) until logText shows the
// start line msg and returns the address in its field key. The log may be
// JSON or text (slog's two handlers).
func startedAddr(t *testing.T, what string, logText func() string, msg, key string) string {
	t.Helper()
	var addr string
	waitFor(t, fmt.Sprintf("%s logging %q with its %s", what, msg, key), startLineWithin, func() (bool, string) {
		text := logText()
		addr = lineField(text, msg, key)
		return addr != "", "log so far:\n" + text
	})
	return addr
}

// startedURL is startedAddr's "worker started" listen address as a base URL.
func startedURL(t *testing.T, what string, logText func() string) string {
	t.Helper()
	return "http://" + startedAddr(t, what, logText, workerStarted, "listen")
}

// lineField returns field key of the first complete log line whose message
// is msg, or "" if there is none yet (or it has no such field).
func lineField(text, msg, key string) string {
	lines := strings.Split(text, "\n")
	for _, line := range lines[:len(lines)-1] { // the last is still being written
		if strings.HasPrefix(line, "{") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != msg {
				continue
			}
			if v, ok := m[key].(string); ok {
				return v
			}
			return ""
		}
		if !strings.Contains(line, ` msg="`+msg+`"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
		return ""
	}
	return ""
}

// fileLog reads a log file another process writes, for startedAddr.
func fileLog(path string) func() string {
	return func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
}

// listeningURL waits until process pid holds a listening TCP socket on
// 127.0.0.1 and returns it as a base URL. It reads the kernel's socket
// table (Linux /proc), for a process whose log cannot be read (one whose
// stderr is /dev/full); the process must have just one listener.
func listeningURL(t *testing.T, what string, pid int) string {
	t.Helper()
	var addr string
	waitFor(t, what+" listening on 127.0.0.1", startLineWithin, func() (bool, string) {
		var err error
		addr, err = loopbackListener(pid)
		if err != nil {
			return false, err.Error()
		}
		return addr != "", "no listening socket yet"
	})
	return "http://" + addr
}

// loopbackListener returns the 127.0.0.1 address of a listening TCP socket
// that pid holds, or "" if it holds none yet.
func loopbackListener(pid int) (string, error) {
	socks, err := procnet.TCP4(pid)
	if err != nil {
		return "", err
	}
	for _, s := range socks {
		if s.State == procnet.Listen && s.Local.Addr() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			return s.Local.String(), nil
		}
	}
	return "", nil
}
