package chaos

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

// fixtureHTTP is fixtureStorage with an HTTP proxy in front of Azurite, and
// optionally the toxiproxy Proxy in front of that (the local cluster's chain).
func fixtureHTTP(t *testing.T) (direct *container.Client, hp *HTTPProxy) {
	t.Helper()
	srv := startAzurite(t)
	direct, _ = fixtureStorage(t)
	hp, err := NewHTTPProxy(containerNameOf(direct), fmt.Sprintf("%s:%d", srv.Host, srv.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hp.Close)
	return direct, hp
}

// leaseVia is a lease client on blob name reached through hostport, with its
// own fixed lease ID (as the worker's Lock has).
func leaseVia(t *testing.T, hostport string, direct *container.Client, name string) *lease.BlobClient {
	t.Helper()
	id := uuid.NewString()
	lc, err := lease.NewBlobClient(containerVia(t, hostport, containerNameOf(direct)).NewBlobClient(name), &lease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// heldVia puts the blob "leader" and takes a 15 s lease on it through hp,
// returning the holder's lease client.
func heldVia(t *testing.T, hp *HTTPProxy, direct *container.Client) *lease.BlobClient {
	t.Helper()
	if err := put(direct, "leader", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	holder := leaseVia(t, hp.Addr(), direct, "leader")
	if _, err := holder.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
		t.Fatal(err)
	}
	return holder
}

func TestClassifyRequest(t *testing.T) {
	req := func(method, query string, action string) *http.Request {
		r := &http.Request{Method: method, URL: &url.URL{Path: "/acct/c/b", RawQuery: query}, Header: http.Header{}}
		if action != "" {
			r.Header.Set("X-Ms-Lease-Action", action)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want Op
	}{
		{"acquire", req("PUT", "comp=lease", "acquire"), OpAcquire},
		{"renew, odd case", req("PUT", "COMP=Lease", "Renew"), OpRenew},
		{"release", req("PUT", "comp=lease", "release"), OpRelease},
		{"break", req("PUT", "comp=lease", "break"), OpBreak},
		{"change", req("PUT", "comp=lease", "change"), OpChange},
		{"metadata write", req("PUT", "comp=metadata", ""), OpMetadata},
		{"metadata read is not a write", req("GET", "comp=metadata", ""), OpOther},
		{"append", req("PUT", "comp=appendblock", ""), OpAppend},
		{"properties read", req("HEAD", "", ""), OpOther},
		{"create blob", req("PUT", "", ""), OpOther},
		{"lease without an action", req("PUT", "comp=lease", ""), OpOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassifyRequest(tc.r); got != tc.want {
				t.Fatalf("ClassifyRequest = %q, want %q", got, tc.want)
			}
		})
	}
	if err := Op("lease").validate(); err == nil {
		t.Fatal(`op "lease" accepted`)
	}
}

// With no fault on it, the proxy forwards every kind of request unchanged,
// also behind the toxiproxy Proxy (the local cluster's chain).
func TestHTTPProxy_ForwardsUnchanged(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	px := newProxy(t, "chain-"+containerNameOf(direct), hp.Addr())
	for _, hostport := range []string{hp.Addr(), px.Addr()} {
		via := containerVia(t, hostport, containerNameOf(direct))
		name := "blob-" + uuid.NewString()[:8]
		if err := put(via, name, 5*time.Second); err != nil {
			t.Fatalf("upload via %s: %v", hostport, err)
		}
		if !exists(t, direct, name) {
			t.Fatalf("blob uploaded via %s is not in storage", hostport)
		}
		lc := leaseVia(t, hostport, direct, name)
		if _, err := lc.AcquireLease(ctxT(t, 5*time.Second), 15, nil); err != nil {
			t.Fatalf("acquire via %s: %v", hostport, err)
		}
		md := "7"
		id := lc.LeaseID()
		if _, err := via.NewBlobClient(name).SetMetadata(ctxT(t, 5*time.Second), map[string]*string{"term": &md}, leaseCond(id)); err != nil {
			t.Fatalf("metadata write via %s: %v", hostport, err)
		}
		props, err := direct.NewBlobClient(name).GetProperties(ctxT(t, 5*time.Second), nil)
		if err != nil || props.Metadata == nil {
			t.Fatalf("read back: %v", err)
		}
		if _, err := lc.ReleaseLease(ctxT(t, 5*time.Second), nil); err != nil {
			t.Fatalf("release via %s: %v", hostport, err)
		}
	}
}

func leaseCond(id *string) *blob.SetMetadataOptions {
	return &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: id}}}
}

// directAddr is Azurite's host:port.
func directAddr(t *testing.T) string {
	t.Helper()
	srv := startAzurite(t)
	return fmt.Sprintf("%s:%d", srv.Host, srv.Port)
}

// Azurite (Node) closes a keep-alive connection after 5 s without traffic.
// A request the proxy writes on such a connection just as Node closes it is
// reset: the worker would see a failure nobody injected. The proxy must not
// send on a connection idle for as long as upstreamIdleTimeout, which stays
// well below Node's 5 s.
func TestHTTPProxy_NeverSendsOnAConnectionStorageMayBeClosing(t *testing.T) {
	_, hp := fixtureHTTP(t)
	client := &http.Client{Timeout: 5 * time.Second}
	put := func() {
		t.Helper()
		// Unsigned: Azurite answers 403 after a full round trip, like any
		// write. A PUT, because Go's transport retries an idempotent request
		// (GET) on a reused connection found closed, and never a PUT.
		req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/devstoreaccount1/idle?restype=container", hp.Addr()), strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	put()
	idle := upstreamIdleTimeout + upstreamIdleTimeout/4
	time.Sleep(idle) // the condition under test is the idle time itself
	put()
	recs, _ := hp.Requests().Records()
	if len(recs) != 2 {
		t.Fatalf("want 2 records, got %+v", recs)
	}
	if r := recs[1]; r.Status == 0 || (r.Reused && r.IdleFor >= upstreamIdleTimeout) {
		t.Fatalf("the second request went out on a pooled connection idle %v (reused %v, status %d): the proxy keeps idle connections past %v, into Node's 5 s keep-alive close",
			r.IdleFor.Round(time.Millisecond), r.Reused, r.Status, upstreamIdleTimeout)
	}
}
