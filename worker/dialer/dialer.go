// Package dialer makes the worker's storage HTTP transport connect every
// connection to one fixed address — the chaos sidecar's local proxy — while
// TLS still runs end to end with the storage account: the handshake sends the
// real storage host name (SNI) and verifies the certificate against it.
//
// The sidecar is a plain TCP proxy (toxiproxy) that never sees plaintext, so
// a proxied worker is exactly as authenticated and confidential as a direct
// one; the only thing that changes is the TCP path. Token requests for the
// managed identity do not use this transport (azidentity has its own), so
// the sidecar never carries them.
package dialer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// ErrAddress is wrapped when the dial address is not host:port.
var ErrAddress = errors.New("dialer: invalid address")

// Validate checks that addr is host:port with a non-empty host and a port in
// 1–65535.
func Validate(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrAddress, addr, err)
	}
	if host == "" {
		return fmt.Errorf("%w %q: empty host", ErrAddress, addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%w %q: port must be 1-65535", ErrAddress, addr)
	}
	return nil
}

// Transport returns an HTTP transport that dials addr for every connection,
// whatever host the request names. TLS is left to net/http, which takes the
// server name from the request URL: certificates are verified against the
// storage host, never against addr. tlsConfig may be nil (system roots); it
// is cloned, and its ServerName must be empty so each request's host is used.
func Transport(addr string, tlsConfig *tls.Config) (*http.Transport, error) {
	if err := Validate(addr); err != nil {
		return nil, err
	}
	if tlsConfig != nil && tlsConfig.ServerName != "" {
		return nil, errors.New("dialer: tlsConfig.ServerName must be empty (the request's host is verified)")
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		// No proxy from the environment: the fixed address is the path.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
		if t.TLSClientConfig.MinVersion < tls.VersionTLS12 {
			t.TLSClientConfig.MinVersion = tls.VersionTLS12
		}
	}
	return t, nil
}

// Client is Transport wrapped in an http.Client; it satisfies the Azure SDK's
// policy.Transporter.
func Client(addr string, tlsConfig *tls.Config) (*http.Client, error) {
	t, err := Transport(addr, tlsConfig)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}
