package daprsdk

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/lockapi/daprpb"
)

// pythonUserAgent is what the Python SDK (dapr 1.19) names itself.
const pythonUserAgent = "dapr-sdk-python/1.19.0"

// pyClient replays the Python SDK's DaprGrpcClient: before anything it
// polls DAPR_HTTP_ENDPOINT's /v1.0/healthz/outbound until a 2xx
// (DaprHealth.wait_for_sidecar), then opens an insecure channel to
// DAPR_GRPC_ENDPOINT with its user agent and an interceptor adding
// dapr-api-token, and calls the Dapr stub's TryLockAlpha1 and UnlockAlpha1
// with no deadline (DAPR_API_TIMEOUT_SECONDS unset).
type pyClient struct {
	conn *grpc.ClientConn
}

func newPyClient(t *testing.T, e Endpoint, tok string) *pyClient {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		req, _ := http.NewRequest("GET", e.HTTP+"/v1.0/healthz/outbound", nil)
		req.Header.Set("User-Agent", pythonUserAgent)
		req.Header.Set("dapr-api-token", tok)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("Dapr health check timed out, after 60")
		}
	}
	withToken := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, "dapr-api-token", tok), method, req, reply, cc, opts...)
	}
	conn, err := grpc.NewClient(e.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(pythonUserAgent), grpc.WithUnaryInterceptor(withToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &pyClient{conn: conn}
}

func method(name string) string { return "/" + lockapi.DaprService + "/" + name }

func (c *pyClient) tryLock(ctx context.Context, store, res, owner string, expiry int32, opts ...grpc.CallOption) (bool, error) {
	out := &daprpb.TryLockResponse{}
	err := c.conn.Invoke(ctx, method(lockapi.MethodTryLock), &daprpb.TryLockRequest{StoreName: store, ResourceId: res, LockOwner: owner, ExpiryInSeconds: expiry}, out, opts...)
	return out.GetSuccess(), err
}

func (c *pyClient) unlock(ctx context.Context, store, res, owner string) (daprpb.UnlockResponse_Status, error) {
	out := &daprpb.UnlockResponse{}
	err := c.conn.Invoke(ctx, method(lockapi.MethodUnlock), &daprpb.UnlockRequest{StoreName: store, ResourceId: res, LockOwner: owner}, out)
	return out.GetStatus(), err
}

// The Python SDK's calls (dapr 1.19's try_lock and unlock), replayed by
// grpc-go with Dapr's generated messages: the steps, then Dapr's
// error statuses as grpc-go reads them.
func TestDaprSDK_PythonCallsReplayedWithGRPCGo(t *testing.T) {
	t.Parallel()
	e := startService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	py := newPyClient(t, e, e.Token)
	const res = "py-grpc"
	var printed []string
	lock := func(step, owner string, want bool) {
		got, err := py.tryLock(ctx, store, res, owner, 30)
		if err != nil || got != want {
			t.Fatalf("%s: success %v, %v; want %v", step, got, err, want)
		}
		printed = append(printed, step+": success="+map[bool]string{true: "True", false: "False"}[got])
	}
	unlock := func(step, owner string, want daprpb.UnlockResponse_Status) {
		got, err := py.unlock(ctx, store, res, owner)
		if err != nil || got != want {
			t.Fatalf("%s: status %v, %v; want %v", step, got, err, want)
		}
		printed = append(printed, step+": status="+got.String())
	}
	lock("lock", "owner-a", true)
	lock("lock by another owner", "owner-b", false)
	unlock("unlock by another owner", "owner-b", daprpb.UnlockResponse_LOCK_BELONGS_TO_OTHERS)
	unlock("unlock", "owner-a", daprpb.UnlockResponse_SUCCESS)
	unlock("unlock again", "owner-a", daprpb.UnlockResponse_LOCK_DOES_NOT_EXIST)
	lock("lock again", "owner-a", true)
	lock("same owner locks twice", "owner-a", false)
	unlock("unlock at the end", "owner-a", daprpb.UnlockResponse_SUCCESS)
	t.Logf("grpc-go replaying the Python SDK:\n%s", joinLines(printed))

	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"expiry not positive", func() error { _, err := py.tryLock(ctx, store, res, "o", 0); return err }, codes.InvalidArgument},
		{"another store", func() error { _, err := py.tryLock(ctx, "redis", res, "o", 30); return err }, codes.InvalidArgument},
		{"a compressed call", func() error {
			_, err := py.tryLock(ctx, store, res, "o", 30, grpc.UseCompressor(gzip.Name))
			return err
		}, codes.Unimplemented},
		{"a method not served", func() error {
			return py.conn.Invoke(ctx, method("GetMetadata")+"X", &daprpb.GetMetadataRequest{}, &daprpb.GetMetadataResponse{})
		}, codes.Unimplemented},
		{"a deadline that passes", func() error {
			dctx, dcancel := context.WithTimeout(ctx, time.Microsecond)
			defer dcancel()
			_, err := py.tryLock(dctx, store, res, "o", 30)
			return err
		}, codes.DeadlineExceeded},
	} {
		if err := tc.call(); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	wrong := newPyClient(t, e, "not-the-token")
	if _, err := wrong.tryLock(ctx, store, res, "o", 30); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a wrong token: %v, want Unauthenticated", err)
	}
}

func joinLines(ls []string) string {
	s := ""
	for _, l := range ls {
		s += l + "\n"
	}
	return s
}
