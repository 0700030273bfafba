package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

func TestLock_InvalidUseExitsTwoNamingTheProblem(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no resource", []string{"lock"}, "missing RESOURCE"},
		{"flag instead of resource", []string{"lock", conn, "--", "true"}, "missing RESOURCE"},
		{"blob is derived", []string{"lock", "r", conn, "--blob", "x", "--", "true"}, "--blob is not a flag of blobleader lock"},
		{"once is implied", []string{"lock", "r", conn, "--once", "--", "true"}, "--once is not a flag of blobleader lock"},
		{"bad wait", []string{"lock", "r", conn, "--wait", "soon", "--", "true"}, `invalid --wait "soon"`},
		{"wait and no-wait", []string{"lock", "r", conn, "--wait=1s", "--no-wait", "--", "true"}, "exclusive"},
		{"bad prefix", []string{"lock", "r", conn, "--prefix=locks.", "--", "true"}, `invalid --prefix "locks."`},
		{"resource too long", []string{"lock", strings.Repeat("r", 1025), conn, "--", "true"}, "invalid RESOURCE (1025 bytes)"},
		{"run's rules apply", []string{"lock", "r", conn, "--", "no-such-command-blobleader"}, "not in $PATH"},
		{"no command", []string{"lock", "r", conn}, "missing -- before the command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.args...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s", code, tc.want, out)
			}
		})
	}
}

// lock runs the command once under the resource's named lock — the same
// lock the library and the service hand out — and exits with its status;
// --no-wait and --wait give up with exit 1 while another holds it.
func TestLock_RunsOnceUnderTheNamedLockAndGivesUpWhenHeld(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	conn := "--connection-string=" + az.ConnectionString()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	code, out := runWorkerCmd(t, nil, "lock", "acct/42", conn, "--container=locktest", "--log-format=json",
		"--", "sh", "-c", `echo "term=$BLOBLEADER_TERM"; exit 3`)
	if code != 3 || !strings.Contains(out, "term=") {
		t.Fatalf("lock -- sh: exit %d, want the command's 3 and its term:\n%s", code, out)
	}

	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "locktest", RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The blob says which resource it locks, as the library's blobs do.
	name, _ := mutex.BlobName(mutex.DefaultPrefix, "acct/42")
	props, err := c.NewBlobClient(name).GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := props.Metadata["Resource"]; v == nil || *v != strconv.QuoteToASCII("acct/42") {
		t.Fatalf("the lock blob's metadata %v has no resource=%q", metadataText(props.Metadata), strconv.QuoteToASCII("acct/42"))
	}
	l, err := mutex.New(c, mutex.DefaultConfig("library-holder"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.TryLock(ctx, "acct/42")
	if err != nil {
		t.Fatalf("the library could not take the lock after lock exited (not released?): %v", err)
	}
	defer h.Unlock(ctx)
	// max tells giving up (a start, a request, the 2 s wait) from waiting
	// for a lock the library holds and renews, i.e. for ever: it needs no
	// stall (docs/chaos.md#a-busy-machine).
	for _, tc := range []struct {
		name string
		flag string
		want string
		max  time.Duration
		code int
	}{
		{"no-wait", "--no-wait", "held by library-holder", 8 * time.Second, 75},
		{"wait 2s", "--wait=2s", "not holding it within 2s: held by library-holder", 8 * time.Second, 75},
		{"no-wait, flock's -E", "--no-wait --conflict-exit-code=9", "held by library-holder", 8 * time.Second, 9},
	} {
		start := time.Now()
		args := append([]string{"lock", "acct/42", conn, "--container=locktest", "--log-format=json"}, strings.Fields(tc.flag)...)
		code, out := runWorkerCmd(t, nil, append(args, "--", "sh", "-c", `echo R""AN`)...)
		took := time.Since(start)
		if code != tc.code || !strings.Contains(out, tc.want) || strings.Contains(out, "RAN") || took > tc.max {
			t.Fatalf("%s while held: exit %d after %s, want %d saying %q without running, within %s:\n%s", tc.name, code, took, tc.code, tc.want, tc.max, out)
		}
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	code, out = runWorkerCmd(t, nil, "lock", "acct/42", conn, "--container=locktest", "--no-wait", "--", "sh", "-c", `echo R""AN`)
	if code != 0 || !strings.Contains(out, "RAN") {
		t.Fatalf("--no-wait on a free lock: exit %d:\n%s", code, out)
	}
}

func TestLocks_RefusesAnUnprotectedNonLoopbackListen(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // the parallel subtests run after this function returns
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"all interfaces without a token", nil, []string{"locks", conn, "--listen=:3500"}, `invalid --listen ":3500": an address that is not loopback requires a bearer token`},
		{"a LAN address without a token", nil, []string{"locks", conn, "--listen=10.0.0.1:3500"}, "requires a bearer token"},
		{"empty token", []string{"BLOBLEADER_LOCKS_TOKEN= "}, []string{"locks", conn, "--listen=:3500"}, "invalid BLOBLEADER_LOCKS_TOKEN: must not be empty"},
		{"token twice", []string{"BLOBLEADER_LOCKS_TOKEN=x"}, []string{"locks", conn, "--token-file=/nonexistent"}, "exclusive"},
		{"missing token file", nil, []string{"locks", conn, "--token-file=/nonexistent/t"}, `invalid --token-file "/nonexistent/t"`},
		{"max wait", nil, []string{"locks", conn, "--max-wait=2m"}, "invalid --max-wait 2m0s"},
		{"retry period", nil, []string{"locks", conn, "--retry-period=1ms"}, "invalid --retry-period"},
		{"a port that is no port", nil, []string{"locks", conn, "--listen=127.0.0.1:99999"}, "cannot listen on --listen 127.0.0.1:99999: "},
		{"a busy port", nil, []string{"locks", conn, "--listen=" + busy.Addr().String()}, "cannot listen on --listen " + busy.Addr().String() + ": address already in use"},
		{"gRPC on --listen's address", nil, []string{"locks", conn, "--listen=127.0.0.1:3600", "--grpc-listen=127.0.0.1:3600"}, `invalid --grpc-listen "127.0.0.1:3600": the same address as --listen`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := runWorkerCmd(t, append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tc.env...), tc.args...)
			if code != 2 || !strings.Contains(out, tc.want) || strings.Count(strings.TrimSpace(out), "\n") > 0 {
				t.Fatalf("exit %d, want 2 with one line saying %q:\n%s", code, tc.want, out)
			}
		})
	}
}

// Port 0 asks the kernel for a free port, a different one for each
// listener: --listen and --grpc-listen both on port 0 are two addresses,
// not "the same address" (tests and one-off runs use it; the start line
// logs the two ports).
func TestLocks_PortZeroOnBothListenersIsAccepted(t *testing.T) {
	t.Parallel()
	if _, err := parseLocksOptions([]string{"--connection-string=" + goodConn, "--listen=127.0.0.1:0", "--grpc-listen=127.0.0.1:0"}, io.Discard); err != nil {
		t.Fatalf("--listen and --grpc-listen both 127.0.0.1:0: %v; want accepted", err)
	}
}

func metadataText(md map[string]*string) string {
	var b strings.Builder
	for k, v := range md {
		if v != nil {
			fmt.Fprintf(&b, "%s=%s ", k, *v)
		}
	}
	return b.String()
}

// Two one-shot locks at once on one host (or beside a worker on :8080):
// a one-shot lock opens no listener unless asked (--listen).
func TestLock_OneShotLocksListenOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	conn := "--connection-string=" + az.ConnectionString()
	busy, err := net.Listen("tcp", ":8080") // a worker's default address, taken (if free)
	if err == nil {
		defer busy.Close()
	}
	outs := make(chan string, 2)
	for _, res := range []string{"job-a", "job-b"} {
		go func() {
			code, out := runWorkerCmd(t, nil, "lock", res, conn, "--container=twolocks", "--log-format=json", "--", "sh", "-c", "sleep 1; echo R\"\"AN")
			outs <- fmt.Sprintf("exit %d\n%s", code, out)
		}()
	}
	for range 2 {
		if out := <-outs; !strings.HasPrefix(out, "exit 0\n") || !strings.Contains(out, "RAN") {
			t.Errorf("a one-shot lock beside another and a busy :8080: %s", out)
		}
	}
}

// Storage down: the lock says so, with its own exit status (69 unless
// --storage-exit-code), distinct from "held by another" and the command's.
func TestLock_StorageDownIsNotHeldByAnother(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flags []string
		code  int
	}{
		{[]string{"--no-wait"}, 69},
		{[]string{"--wait=3s"}, 69},
		{[]string{"--no-wait", "--storage-exit-code=7"}, 7},
	} {
		args := append([]string{"lock", "r", "--connection-string=" + goodConn, "--container=down"}, tc.flags...)
		code, out := runWorkerCmd(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, append(args, "--", "sh", "-c", "echo R\"\"AN")...)
		if code != tc.code || !strings.Contains(out, `blobleader: lock "r" not taken: storage failed: `) || strings.Contains(out, "RAN") {
			t.Fatalf("%v with storage down: exit %d, want %d saying storage failed:\n%s", tc.flags, code, tc.code, out)
		}
	}
	code, out := runWorkerCmd(t, nil, "lock", "r", "--connection-string="+goodConn, "--conflict-exit-code=0", "--", "true")
	if code != 2 || !strings.Contains(out, "invalid --conflict-exit-code 0: must be between 1 and 255") {
		t.Fatalf("--conflict-exit-code 0: exit %d:\n%s", code, out)
	}
}
