package lockapi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
)

// gRPC's unary calls on net/http's own HTTP/2 server (cleartext h2c with
// prior knowledge, or TLS): the gRPC-over-HTTP/2 protocol — a POST with
// content-type application/grpc, the message in a 5-byte length-prefixed
// frame, the status in the trailers (grpc-status, grpc-message) or, for an
// answer without a message, in the headers alone ("Trailers-Only") — so
// that the binary serves Dapr's gRPC API without a gRPC library.

// gRPC status codes (google.golang.org/grpc/codes), the ones answered here.
type grpcCode int

const (
	codeOK                grpcCode = 0
	codeCanceled          grpcCode = 1
	codeInvalidArgument   grpcCode = 3
	codeDeadlineExceeded  grpcCode = 4
	codeResourceExhausted grpcCode = 8
	codeUnimplemented     grpcCode = 12
	codeInternal          grpcCode = 13
	codeUnauthenticated   grpcCode = 16
)

// grpcStatus is a call's outcome other than OK.
type grpcStatus struct {
	code grpcCode
	msg  string
}

func (s *grpcStatus) Error() string { return fmt.Sprintf("grpc status %d: %s", s.code, s.msg) }

// maxGRPCMessage bounds a request message, as maxBody bounds an HTTP body.
const maxGRPCMessage = maxBody

// isGRPC reports whether r is a gRPC call: HTTP/2 with a gRPC content type.
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return r.ProtoMajor == 2 && (ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;"))
}

// unaryCall is one gRPC call being served.
type unaryCall struct {
	w http.ResponseWriter
	r *http.Request
}

// context is the call's context: the request's, ended at its grpc-timeout.
func (c unaryCall) context() (context.Context, context.CancelFunc, *grpcStatus) {
	ctx := c.r.Context()
	v := c.r.Header.Get("Grpc-Timeout")
	if v == "" {
		return ctx, func() {}, nil
	}
	d, err := parseTimeout(v)
	if err != nil {
		return nil, nil, &grpcStatus{codeInternal, err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// parseTimeout reads a grpc-timeout value: at most 8 digits and a unit
// (H, M, S, m, u, n).
func parseTimeout(v string) (time.Duration, error) {
	if len(v) < 2 || len(v) > 9 {
		return 0, fmt.Errorf("malformed grpc-timeout %q", v)
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("malformed grpc-timeout %q", v)
	}
	unit, ok := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second,
		'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
	if !ok {
		return 0, fmt.Errorf("malformed grpc-timeout %q: unknown unit", v)
	}
	return time.Duration(n) * unit, nil
}

// read reads the call's one request message into m. Compressed messages
// are refused: the service accepts identity only, and says so.
func (c unaryCall) read(m proto.Message) *grpcStatus {
	if enc := c.r.Header.Get("Grpc-Encoding"); enc != "" && enc != "identity" {
		return &grpcStatus{codeUnimplemented, fmt.Sprintf("grpc-encoding %s is not accepted: send messages uncompressed (grpc-accept-encoding: identity)", enc)}
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c.r.Body, hdr[:]); err != nil {
		return &grpcStatus{codeInternal, "no request message: " + readErr(err)}
	}
	if hdr[0] != 0 {
		return &grpcStatus{codeInternal, "a compressed request message without grpc-encoding"}
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxGRPCMessage {
		return &grpcStatus{codeResourceExhausted, fmt.Sprintf("request message of %d bytes: at most %d", n, maxGRPCMessage)}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.r.Body, buf); err != nil {
		return &grpcStatus{codeInternal, "truncated request message: " + readErr(err)}
	}
	if k, _ := c.r.Body.Read(hdr[:1]); k != 0 {
		return &grpcStatus{codeUnimplemented, "more than one request message: every method served is unary"}
	}
	if err := proto.Unmarshal(buf, m); err != nil {
		return &grpcStatus{codeInternal, "cannot parse the request message: " + err.Error()}
	}
	return nil
}

func readErr(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the stream ended"
	}
	return err.Error()
}

// reply answers the call: the message and status OK, or st alone.
func (c unaryCall) reply(m proto.Message, st *grpcStatus) {
	h := c.w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Accept-Encoding", "identity")
	if st != nil {
		// Trailers-Only: the status in the headers, no message.
		h.Set("Grpc-Status", strconv.Itoa(int(st.code)))
		h.Set("Grpc-Message", percentEncode(st.msg))
		c.w.WriteHeader(http.StatusOK)
		return
	}
	b, err := proto.Marshal(m)
	if err != nil {
		c.reply(nil, &grpcStatus{codeInternal, "cannot encode the answer: " + err.Error()})
		return
	}
	frame := make([]byte, 5+len(b))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(b)))
	copy(frame[5:], b)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(frame)
	h.Set(http.TrailerPrefix+"Grpc-Status", "0")
}

// percentEncode encodes a grpc-message value: bytes outside printable
// ASCII, and '%', as %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
