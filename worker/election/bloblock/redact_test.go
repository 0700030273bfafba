package bloblock

import (
	"context"
	"errors"
	"net"
	"net/url"
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

// An error from a request that got no answer quotes the request URL: the
// SDK's own error (as the ledger, the shard pool and the subcommands wrap
// it) has the signature redacted and is still what it was; the lock's
// compact error carries no signature either.
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	noSig := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s on a closed port succeeded", what)
		}
		if msg := err.Error(); strings.Contains(msg, plantedSig) || strings.Contains(msg, "c2VjcmV0LXNpZ25hdHVyZQ==") {
			t.Fatalf("%s: the error carries the signature: %s", what, msg)
		}
		if !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("%s: the error lost its cause: %s", what, err)
		}
	}
	_, err = c.NewBlobClient("leader").GetProperties(ctx, nil)
	noSig("GetProperties", err)
	var ue *url.Error
	if !errors.As(err, &ue) || !strings.Contains(ue.URL, "sig=REDACTED") {
		t.Fatalf("want a *url.Error with sig=REDACTED in its URL: %v", err)
	}
	l, _ := New(c, "leader")
	_, err = l.Get(ctx)
	noSig("Lock.Get", err)
}
