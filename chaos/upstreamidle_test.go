package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Azurite (Node) closes a keep-alive connection after 5 s without traffic.
// A request the proxy writes on such a connection just as Node closes it is
// reset: the worker sees a failure nobody injected (one `connection reset by
// peer` from Azurite in a shard soak's request log, on an acquire forwarded
// 5.02 s after one of the proxy's earlier requests ended). The proxy must not send on a connection idle for as long as
// upstreamIdleTimeout, which stays well below Node's 5 s.
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
