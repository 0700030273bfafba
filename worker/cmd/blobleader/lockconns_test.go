package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startLocks runs `blobleader locks` with a token and args, on a loopback
// port the kernel picks (and --grpc-listen off unless args set it), until
// the test ends; it returns the HTTP address once /healthz answers (on a
// connection it closes), and the process's log.
func startLocks(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"locks", "--connection-string=" + goodConn, "--listen", anyPort, "--grpc-listen=", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "BLOBLEADER_LOCKS_TOKEN=s3cret", "AZURE_STORAGE_CONNECTION_STRING=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := startedAddr(t, "blobleader locks", stderr.String, locksStarted, "listen")
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	waitFor(t, fmt.Sprintf("blobleader locks %v answering /healthz", args), 10*time.Second, func() (bool, string) {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
	return addr, stderr
}

// closedWithin reads c until the server closes it and returns how long
// that took, or an error if it stays open longer than limit.
func closedWithin(c net.Conn, limit time.Duration, what string) (time.Duration, error) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return 0, fmt.Errorf("%s stayed open %s: the server must close it", what, limit)
	}
	return time.Since(start), nil
}

// Connections cannot be held for ever: one that sends no request is closed
// after the header timeout (5 s); one idle after an answer (here a 401: no
// token) after --idle-timeout (default 30 s); and at most --max-connections
// are served at once.
func TestLocks_IdleConnectionsAreClosedAndBounded(t *testing.T) {
	t.Parallel()
	t.Run("timeouts", func(t *testing.T) {
		t.Parallel()
		addr, _ := startLocks(t)
		silent, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		idle, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()
		fmt.Fprintf(idle, "POST /v1.0-alpha1/lock/lockstore HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
		if err != nil || resp.StatusCode != 401 {
			t.Fatalf("request without the token: %v %v, want 401", resp, err)
		}
		resp.Body.Close()
		idleErr := make(chan error, 1)
		go func() {
			took, err := closedWithin(idle, 35*time.Second, "a keep-alive connection idle after a 401")
			if err == nil {
				t.Logf("a connection idle after its answer was closed after %s", took.Round(10*time.Millisecond))
			}
			idleErr <- err
		}()
		took, err := closedWithin(silent, 7*time.Second, "a connection that sent nothing")
		if err != nil {
			t.Error(err)
		} else {
			t.Logf("a connection that sent nothing was closed after %s", took.Round(10*time.Millisecond))
		}
		if err := <-idleErr; err != nil {
			t.Error(err)
		}
	})
	t.Run("bound", func(t *testing.T) {
		t.Parallel()
		addr, _ := startLocks(t, "--max-connections=2")
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			held = append(held, c)
		}
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
		if resp, err := hc.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatal("a third connection was served while --max-connections=2 were open")
		}
		for _, c := range held {
			if _, err := closedWithin(c, 7*time.Second, "a held connection that sent nothing"); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("once the held connections closed: %v %v, want 200", resp, err)
		}
		resp.Body.Close()
	})
}

// Dapr's SDKs' probes, the metadata and a lock call over gRPC on the
// default ports' flags: --grpc-listen serves gRPC (h2c), --listen serves
// HTTP/1.1 and gRPC.
func TestLocks_ServesHTTPAndGRPCListeners(t *testing.T) {
	t.Parallel()
	addr, stderr := startLocks(t, "--grpc-listen="+anyPort)
	grpcAddr := startedAddr(t, "blobleader locks", stderr.String, locksStarted, "grpc_listen")
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	for _, a := range []string{addr, grpcAddr} {
		req, _ := http.NewRequest("POST", "http://"+a+"/dapr.proto.runtime.v1.Dapr/GetMetadata", strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("dapr-api-token", "s3cret")
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GetMetadata over h2c on %s: %v", a, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.Trailer.Get("Grpc-Status") != "0" || len(body) < 5 {
			t.Fatalf("GetMetadata on %s: HTTP/%d, grpc-status %q, %d bytes", a, resp.ProtoMajor, resp.Trailer.Get("Grpc-Status"), len(body))
		}
	}
}
