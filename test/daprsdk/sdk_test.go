package daprsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/azuritetest"
)

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var seq atomic.Int64

const (
	store = "lockstore"
	token = "sdk-test-token"
)

// startService runs `blobleader locks` with a token on a fresh container
// until the test ends, and returns where the SDKs find it. Its two
// listeners get port 0 and the addresses are read from its start line: a
// port picked free beforehand can be taken by another process before the
// service listens.
func startService(t *testing.T) Endpoint {
	t.Helper()
	container := fmt.Sprintf("sdk%d-%d", time.Now().UnixNano()%1e9, seq.Add(1))
	cmd := exec.Command(cluster.WorkerBinary(t), "locks", "--connection-string", server.ConnectionString(), "--container", container,
		"--store", store, "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), "BLOBLEADER_LOCKS_TOKEN="+token)
	logPath := filepath.Join(t.TempDir(), "locks.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the service's log:\n%s", b)
		}
	})
	var httpAddr, grpcAddr string
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if httpAddr == "" {
			httpAddr, grpcAddr = startedAddrs(logPath)
		}
		if httpAddr != "" {
			if resp, err := hc.Get("http://" + httpAddr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("blobleader locks was not ready within 10s (start line read: listen %q)", httpAddr)
		}
	}
	// The gRPC endpoint without a scheme: the JS SDK warns that http:// is
	// deprecated for it; every SDK reads host:port as cleartext.
	return Endpoint{HTTP: "http://" + httpAddr, GRPC: grpcAddr, Token: token}
}

// startedAddrs reads the service's start line (`lock service started`) from
// its JSON log and returns the addresses it listens on; "" until it is
// there.
func startedAddrs(logPath string) (listen, grpcListen string) {
	b, _ := os.ReadFile(logPath)
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] { // the last is still being written
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "lock service started" {
			continue
		}
		listen, _ = m["listen"].(string)
		grpcListen, _ = m["grpc_listen"].(string)
		return listen, grpcListen
	}
	return "", ""
}

// The steps, and what Dapr's contract answers at each.
var wantSteps = []struct{ step, result string }{
	{"lock", `{"success":true}`},
	{"lock by another owner", `{"success":false}`},
	{"unlock by another owner", `{"status":2}`},
	{"unlock", `{"status":0}`},
	{"unlock again", `{"status":1}`},
	{"lock again", `{"success":true}`},
	{"same owner locks twice", `{"success":false}`},
	{"unlock at the end", `{"status":0}`},
}

// checkSteps compares what the SDK returned with Dapr's contract.
func checkSteps(t *testing.T, steps []Step, out string) {
	t.Helper()
	if len(steps) == 0 || steps[0].Step != "started" {
		t.Fatalf("the SDK did not start:\n%s", out)
	}
	got := steps[1:]
	if len(got) != len(wantSteps) {
		t.Fatalf("%d steps, want %d:\n%s", len(got), len(wantSteps), out)
	}
	for i, w := range wantSteps {
		var a, b any
		_ = json.Unmarshal(got[i].Result, &a)
		_ = json.Unmarshal([]byte(w.result), &b)
		if got[i].Step != w.step || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("step %q returned %s, want %s:\n%s", got[i].Step, got[i].Result, w.result, out)
		}
	}
	t.Logf("the SDK printed:\n%s", strings.TrimSpace(out))
}

// The official JavaScript SDK over HTTP (its default): it polls
// /v1.0/metadata until it answers, then locks and unlocks through
// /v1.0-alpha1/lock and /unlock, with the token as dapr-api-token.
func TestDaprSDK_JavaScriptOverHTTP(t *testing.T) {
	t.Parallel()
	e := startService(t)
	steps, out, err := RunLockSteps(context.Background(), e, HTTP, store, "js-http")
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	checkSteps(t, steps, out)
}

// The official JavaScript SDK over gRPC: its Connect transport (HTTP/2
// with prior knowledge) calls Dapr/GetMetadata until it answers, then
// TryLockAlpha1 and UnlockAlpha1.
func TestDaprSDK_JavaScriptOverGRPC(t *testing.T) {
	t.Parallel()
	e := startService(t)
	steps, out, err := RunLockSteps(context.Background(), e, GRPC, store, "js-grpc")
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	checkSteps(t, steps, out)
}
