package dialer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeHost is a storage host name that resolves nowhere: the test passes only
// if every connection goes to the dial address.
const fakeHost = "stfake.blob.core.windows.invalid"

// tlsServer starts an HTTPS server whose certificate is valid for host only,
// and returns it with a pool that trusts that certificate.
func tlsServer(t *testing.T, host string, h http.Handler) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pool
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		ok         bool
	}{
		{"loopback", "127.0.0.1:10443", true},
		{"name", "localhost:443", true},
		{"ipv6", "[::1]:8443", true},
		{"no port", "127.0.0.1", false},
		{"empty host", ":443", false},
		{"port zero", "127.0.0.1:0", false},
		{"port too big", "127.0.0.1:70000", false},
		{"named port", "127.0.0.1:https", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.addr)
			if tc.ok != (err == nil) {
				t.Fatalf("Validate(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrAddress) {
				t.Fatalf("error %v does not wrap ErrAddress", err)
			}
		})
	}
}

// Every connection goes to the dial address, and TLS verifies (and sends as
// SNI) the host of the request URL, not the dial address.
func TestClient_DialsAddressAndVerifiesStorageHost(t *testing.T) {
	var sni, hostHdr atomic.Value
	srv, pool := tlsServer(t, fakeHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
		hostHdr.Store(r.Host)
		io.WriteString(w, "ok")
	}))
	addr := srv.Listener.Addr().String()
	c, err := Client(addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	resp, err := c.Get("https://" + fakeHost + "/leases/leader?comp=lease")
	if err != nil {
		t.Fatalf("GET through the dial address: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("got %s %q, want 200 ok", resp.Status, body)
	}
	if got := sni.Load(); got != fakeHost {
		t.Errorf("server saw SNI %q, want the storage host %q", got, fakeHost)
	}
	if got := hostHdr.Load(); got != fakeHost {
		t.Errorf("server saw Host %q, want %q", got, fakeHost)
	}

	// A request for another host still lands on the dial address, whose
	// certificate is not valid for that host: verification must fail.
	_, err = c.Get("https://other.blob.core.windows.invalid/")
	var certErr *tls.CertificateVerificationError
	if !errors.As(err, &certErr) {
		t.Fatalf("GET of a host the certificate does not name: err = %v, want a certificate verification error", err)
	}
	if !strings.Contains(err.Error(), "other.blob.core.windows.invalid") {
		t.Errorf("verification error does not name the requested host: %v", err)
	}
}

// Without the test's root, the server's self-signed certificate is refused:
// the dialer never turns verification off.
func TestClient_KeepsVerification(t *testing.T) {
	srv, _ := tlsServer(t, fakeHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c, err := Client(srv.Listener.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	_, err = c.Get("https://" + fakeHost + "/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("err = %v, want x509.UnknownAuthorityError", err)
	}
}

func TestTransport_RejectsFixedServerName(t *testing.T) {
	if _, err := Transport("127.0.0.1:1", &tls.Config{ServerName: "x"}); err == nil {
		t.Fatal("a fixed ServerName would verify the wrong host; want an error")
	}
}

// A closed dial address fails the request even though the URL's host is
// something else entirely: nothing falls back to DNS.
func TestClient_NoFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := Client(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get("https://example.com/")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want a dial error naming %s", err, addr)
	}
}
