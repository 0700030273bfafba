package lockapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/blobleader/blobleader/worker/lockapi/daprpb"
)

// Dapr's gRPC API, dapr.proto.runtime.v1.Dapr, for what the lock service
// does: TryLockAlpha1, UnlockAlpha1 and GetMetadata, with Dapr's messages
// (package daprpb) and Dapr's status codes (InvalidArgument for a malformed
// request or another store, Internal when storage fails, Unauthenticated
// without the dapr-api-token metadata when a token is set). Every other
// method of the service answers Unimplemented, naming what is served.

// DaprService is the gRPC service Dapr's SDKs call.
const DaprService = "dapr.proto.runtime.v1.Dapr"

// The methods served, by their gRPC name.
const (
	MethodTryLock     = "TryLockAlpha1"
	MethodUnlock      = "UnlockAlpha1"
	MethodGetMetadata = "GetMetadata"
)

// grpcMethod is one method served: its request message and how it answers.
type grpcMethod struct {
	label string // the method label of the metrics
	in    func() proto.Message
	serve func(s *Server, ctx context.Context, in proto.Message) (proto.Message, *apiError)
}

var grpcMethods = map[string]grpcMethod{
	MethodTryLock: {"lock", func() proto.Message { return &daprpb.TryLockRequest{} }, (*Server).tryLockGRPC},
	MethodUnlock:  {"unlock", func() proto.Message { return &daprpb.UnlockRequest{} }, (*Server).unlockGRPC},
	MethodGetMetadata: {"metadata", func() proto.Message { return &daprpb.GetMetadataRequest{} },
		func(s *Server, _ context.Context, _ proto.Message) (proto.Message, *apiError) {
			return s.metadata(), nil
		}},
}

// served names the methods for an Unimplemented answer.
var served = fmt.Sprintf("%s serves %s, %s and %s", DaprService, MethodTryLock, MethodUnlock, MethodGetMetadata)

// serveGRPC serves one gRPC call.
func (s *Server) serveGRPC(w http.ResponseWriter, r *http.Request) {
	c := unaryCall{w, r}
	service, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	m, ok := grpcMethods[name]
	if service != DaprService || !ok {
		label := "unknown"
		done := s.metrics.begin(protoGRPC, label)
		done("unimplemented")
		what := "service " + service
		if service == DaprService {
			what = "method " + name
		}
		c.reply(nil, &grpcStatus{codeUnimplemented, fmt.Sprintf("blobleader locks does not serve %s: it serves Dapr's lock API only (%s)", what, served)})
		return
	}
	done := s.metrics.begin(protoGRPC, m.label)
	if s.cfg.Token != "" && !s.authorized(r) {
		msg := "authentication error: api token mismatch"
		if r.Header.Get("dapr-api-token") == "" && r.Header.Get("Authorization") == "" {
			msg = "missing api token in request metadata"
		}
		done("unauthorized")
		c.reply(nil, &grpcStatus{codeUnauthenticated, msg})
		return
	}
	ctx, cancel, st := c.context()
	if st != nil {
		done("invalid")
		c.reply(nil, st)
		return
	}
	defer cancel()
	in := m.in()
	if st := c.read(in); st != nil {
		done("invalid")
		c.reply(nil, st)
		return
	}
	out, e := m.serve(s, ctx, in)
	done(outcome(e))
	if e != nil {
		c.reply(nil, s.grpcError(ctx, e))
		return
	}
	c.reply(out, nil)
}

// grpcError is the status an error answer gets over gRPC, as Dapr's
// (pkg/messages): InvalidArgument for a 400, Internal for a 500 — or the
// deadline's or the cancellation's status when the call ended first.
func (s *Server) grpcError(ctx context.Context, e *apiError) *grpcStatus {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &grpcStatus{codeDeadlineExceeded, "grpc-timeout passed: " + e.Message}
	case ctx.Err() != nil:
		return &grpcStatus{codeCanceled, e.Message}
	case e.status == http.StatusBadRequest:
		return &grpcStatus{codeInvalidArgument, e.Message}
	}
	return &grpcStatus{codeInternal, e.Message}
}

func (s *Server) tryLockGRPC(ctx context.Context, in proto.Message) (proto.Message, *apiError) {
	req := in.(*daprpb.TryLockRequest)
	q := request{ResourceID: req.GetResourceId(), LockOwner: req.GetLockOwner(), Expiry: int64(req.GetExpiryInSeconds())}
	ok, _, e := s.tryLock(ctx, s.now(), req.GetStoreName(), q)
	return &daprpb.TryLockResponse{Success: ok}, e
}

func (s *Server) unlockGRPC(ctx context.Context, in proto.Message) (proto.Message, *apiError) {
	req := in.(*daprpb.UnlockRequest)
	q := request{ResourceID: req.GetResourceId(), LockOwner: req.GetLockOwner()}
	status, e := s.leaseOp(ctx, req.GetStoreName(), q, verbUnlock)
	return &daprpb.UnlockResponse{Status: daprpb.UnlockResponse_Status(status)}, e
}
