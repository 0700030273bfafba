package lockapi_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/lockapi/daprpb"
)

// These tests speak gRPC's wire protocol by hand over net/http's HTTP/2
// client (h2c with prior knowledge, as gRPC clients do on a plain port),
// so that the root module needs no gRPC library; test/daprsdk runs
// grpc-go's client and the official JS SDK against the real binary.

// newH2C serves api over HTTP/1.1 and cleartext HTTP/2, as the binary does.
func newH2C(t *testing.T, api http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(api)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// grpcAnswer is one call's outcome: the message (if any), status, message.
type grpcAnswer struct {
	msg    []byte
	status string
	text   string
	header http.Header
}

// grpcCall sends one unary call to method of Dapr's service, framing body
// (a proto message, or raw bytes) as gRPC does; headers are added as given.
func grpcCall(t *testing.T, srv *httptest.Server, hc *http.Client, path string, body any, header ...string) grpcAnswer {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case proto.Message:
		var err error
		if raw, err = proto.Marshal(b); err != nil {
			t.Fatal(err)
		}
		raw = frame(0, raw)
	case []byte:
		raw = b
	}
	req, err := http.NewRequest("POST", srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/grpc" {
		t.Fatalf("%s: HTTP/%d %d %s, want HTTP/2 200 application/grpc", path, resp.ProtoMajor, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	a := grpcAnswer{header: resp.Header, status: resp.Header.Get("Grpc-Status"), text: resp.Header.Get("Grpc-Message")}
	if a.status == "" { // not Trailers-Only: the status comes after the message
		a.status, a.text = resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	}
	if len(b) > 0 {
		if len(b) < 5 || b[0] != 0 || int(binary.BigEndian.Uint32(b[1:5])) != len(b)-5 {
			t.Fatalf("%s: answer %x is not one uncompressed gRPC frame", path, b)
		}
		a.msg = b[5:]
	}
	return a
}

func frame(flag byte, b []byte) []byte {
	f := make([]byte, 5+len(b))
	f[0] = flag
	binary.BigEndian.PutUint32(f[1:5], uint32(len(b)))
	copy(f[5:], b)
	return f
}

const daprMethod = "/" + lockapi.DaprService + "/"

// The Python SDK's calls, replayed on the wire: TryLockAlpha1, a second
// owner refused, UnlockAlpha1 by another owner (2), by the owner (0), again
// (1), and the same owner locking twice (false).
func TestGRPC_DaprLockCallsOverH2C(t *testing.T) {
	t.Parallel()
	_, api := newAPIServer(t, "lockstore", freshContainer(), "")
	srv, hc := newH2C(t, api)
	lock := func(owner string) bool {
		a := grpcCall(t, srv, hc, daprMethod+"TryLockAlpha1", &daprpb.TryLockRequest{StoreName: "lockstore", ResourceId: "res", LockOwner: owner, ExpiryInSeconds: 15})
		var out daprpb.TryLockResponse
		if a.status != "0" || proto.Unmarshal(a.msg, &out) != nil {
			t.Fatalf("TryLockAlpha1 by %s: status %s %q", owner, a.status, a.text)
		}
		return out.GetSuccess()
	}
	unlock := func(owner string) daprpb.UnlockResponse_Status {
		a := grpcCall(t, srv, hc, daprMethod+"UnlockAlpha1", &daprpb.UnlockRequest{StoreName: "lockstore", ResourceId: "res", LockOwner: owner})
		var out daprpb.UnlockResponse
		if a.status != "0" || proto.Unmarshal(a.msg, &out) != nil {
			t.Fatalf("UnlockAlpha1 by %s: status %s %q", owner, a.status, a.text)
		}
		return out.GetStatus()
	}
	if !lock("a") || lock("b") {
		t.Fatal("want a's lock granted and b's refused")
	}
	if got := unlock("b"); got != daprpb.UnlockResponse_LOCK_BELONGS_TO_OTHERS {
		t.Fatalf("b's unlock = %v", got)
	}
	if got := unlock("a"); got != daprpb.UnlockResponse_SUCCESS {
		t.Fatalf("a's unlock = %v", got)
	}
	if got := unlock("a"); got != daprpb.UnlockResponse_LOCK_DOES_NOT_EXIST {
		t.Fatalf("a's second unlock = %v", got)
	}
	if !lock("c") || lock("c") {
		t.Fatal("want c's first lock granted and its second refused")
	}
	a := grpcCall(t, srv, hc, daprMethod+"GetMetadata", &daprpb.GetMetadataRequest{})
	var md daprpb.GetMetadataResponse
	if a.status != "0" || proto.Unmarshal(a.msg, &md) != nil || len(md.GetRegisteredComponents()) != 1 ||
		md.GetRegisteredComponents()[0].GetName() != "lockstore" || md.GetRegisteredComponents()[0].GetType() != lockapi.ComponentType {
		t.Fatalf("GetMetadata = status %s %q, %v", a.status, a.text, &md)
	}
}

// Refusals with Dapr's codes, and the protocol's own.
func TestGRPC_StatusCodes(t *testing.T) {
	t.Parallel()
	_, api := newAPIServer(t, "lockstore", freshContainer(), "s3cret")
	srv, hc := newH2C(t, api)
	tok := []string{"dapr-api-token", "s3cret"}
	tryLock := func(r *daprpb.TryLockRequest) []byte { b, _ := proto.Marshal(r); return frame(0, b) }
	for _, tc := range []struct {
		name, path string
		body       any
		header     []string
		status     string
		text       string
	}{
		{"no token", "TryLockAlpha1", &daprpb.TryLockRequest{}, nil, "16", "missing api token in request metadata"},
		{"wrong token", "TryLockAlpha1", &daprpb.TryLockRequest{}, []string{"dapr-api-token", "nope"}, "16", "authentication error: api token mismatch"},
		{"expiry not positive", "TryLockAlpha1", &daprpb.TryLockRequest{StoreName: "lockstore", ResourceId: "r", LockOwner: "o"}, tok, "3", "ExpiryInSeconds is not positive in lock store lockstore"},
		{"another store", "UnlockAlpha1", &daprpb.UnlockRequest{StoreName: "other", ResourceId: "r", LockOwner: "o"}, tok, "3", "lock store other not found"},
		{"no owner", "UnlockAlpha1", &daprpb.UnlockRequest{StoreName: "lockstore", ResourceId: "r"}, tok, "3", "LockOwner is empty in lock store lockstore"},
		{"another method", "GetState", []byte{0, 0, 0, 0, 0}, tok, "12", "blobleader locks does not serve method GetState: it serves Dapr's lock API only (dapr.proto.runtime.v1.Dapr serves TryLockAlpha1, UnlockAlpha1 and GetMetadata)"},
		{"compressed", "TryLockAlpha1", tryLock(&daprpb.TryLockRequest{StoreName: "lockstore"}), append([]string{"grpc-encoding", "gzip"}, tok...), "12", "grpc-encoding gzip is not accepted: send messages uncompressed (grpc-accept-encoding: identity)"},
		{"compressed flag without an encoding", "TryLockAlpha1", frame(1, []byte{1, 2}), tok, "13", "a compressed request message without grpc-encoding"},
		{"no message", "TryLockAlpha1", []byte{}, tok, "13", "no request message: the stream ended"},
		{"two messages", "UnlockAlpha1", append(frame(0, nil), frame(0, nil)...), tok, "12", "more than one request message: every method served is unary"},
		{"bad grpc-timeout", "GetMetadata", frame(0, nil), append([]string{"grpc-timeout", "5x"}, tok...), "13", `malformed grpc-timeout "5x": unknown unit`},
		{"grpc-timeout passed", "TryLockAlpha1", tryLock(&daprpb.TryLockRequest{StoreName: "lockstore", ResourceId: "r", LockOwner: "o", ExpiryInSeconds: 15}),
			append([]string{"grpc-timeout", "1n"}, tok...), "4", "grpc-timeout passed: failed to try acquiring lock: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := grpcCall(t, srv, hc, daprMethod+tc.path, tc.body, tc.header...)
			if a.status != tc.status || !strings.HasPrefix(a.text, tc.text) || a.msg != nil ||
				(a.status != "4" && a.text != tc.text) {
				t.Fatalf("status %s %q (message %x), want %s %q and no message", a.status, a.text, a.msg, tc.status, tc.text)
			}
		})
	}
	a := grpcCall(t, srv, hc, "/grpc.health.v1.Health/Check", frame(0, nil), tok...)
	if a.status != "12" || !strings.Contains(a.text, "does not serve service grpc.health.v1.Health") {
		t.Fatalf("another service: %s %q", a.status, a.text)
	}
}
