package bloblock

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

const plantedSig = "c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"

func sasClientConfig(endpoint string) ClientConfig {
	return ClientConfig{
		ConnectionString: "BlobEndpoint=" + endpoint + ";SharedAccessSignature=sv=2024-08-04&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00%3A00%3A00Z&sig=" + plantedSig,
		Container:        "leases", RequestTimeout: time.Second,
	}
}

// A lock on a SAS client is named from the container and blob alone.
func TestLock_DescribeNamesOnlyTheContainerAndBlob(t *testing.T) {
	c, err := NewContainerClient(sasClientConfig("http://127.0.0.1:1/devstoreaccount1"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(c, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Describe(); got != "blob leases/leader" {
		t.Fatalf("Describe() = %q, want \"blob leases/leader\"", got)
	}
}

// An error from a request that got no answer quotes the request URL; the
// signature in it is redacted, and the error is still what it was.
func TestClient_RequestErrorsCarryNoSignature(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port: connection refused
	c, err := NewContainerClient(sasClientConfig("http://" + addr + "/devstoreaccount1"))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := New(c, "leader")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = l.Get(ctx)
	if err == nil {
		t.Fatal("Get on a closed port succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, plantedSig) || strings.Contains(msg, "c2VjcmV0LXNpZ25hdHVyZQ==") {
		t.Fatalf("the error carries the signature: %s", msg)
	}
	if !strings.Contains(err.Error(), "sig=REDACTED") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("want the URL with sig=REDACTED and the cause: %s", err)
	}
}
