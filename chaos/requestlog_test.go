package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The ring keeps the last N records, oldest first, and says how many it lost.
func TestRequestLog_KeepsTheLatestAndDumpsJSONL(t *testing.T) {
	l := NewRequestLog(3)
	base := time.Date(2026, 11, 24, 20, 0, 0, 0, time.UTC)
	for i := range 5 {
		l.Add(RequestRecord{Proxy: "w1", Op: OpRenew, Arrived: base.Add(time.Duration(i) * time.Second), Status: 200 + i})
	}
	recs, lost := l.Records()
	if lost != 2 || len(recs) != 3 || recs[0].Status != 202 || recs[2].Status != 204 {
		t.Fatalf("records %+v, overwritten %d: want statuses 202..204 and 2 overwritten", recs, lost)
	}
	var buf bytes.Buffer
	if err := l.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || lines[0] != `{"overwritten":2}` {
		t.Fatalf("dump:\n%s\nwant an overwritten line and 3 records", buf.String())
	}
	var r RequestRecord
	if err := json.Unmarshal([]byte(lines[3]), &r); err != nil || r.Status != 204 || r.Op != OpRenew || !r.Arrived.Equal(base.Add(4*time.Second)) {
		t.Fatalf("last line %s: %+v, %v", lines[3], r, err)
	}
}

// Every request through the proxy is recorded with its arrival, forwarding
// and answer, including one a fault held and delivered later.
func TestHTTPProxy_RecordsEveryRequest(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	holder := heldVia(t, hp, direct)
	f := &LateDelivery{Op: OpRelease, Delay: 200, Count: 1, Proxy: hp}
	if err := f.Inject(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ReleaseLease(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AwaitDelivered(ctxT(t, 5*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctxT(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	recs, _ := hp.Requests().Records()
	var acquire, release *RequestRecord
	for i, r := range recs {
		switch {
		case r.Op == OpAcquire && r.Status == http.StatusCreated:
			acquire = &recs[i]
		case r.Op == OpRelease:
			release = &recs[i]
		}
	}
	if acquire == nil || acquire.Proxy != hp.Name() || acquire.Held || acquire.Forwarded.Before(acquire.Arrived) || acquire.Answered.Before(acquire.Forwarded) {
		t.Fatalf("acquire record %+v in %+v: want arrival ≤ forwarded ≤ answered, status 201", acquire, recs)
	}
	if release == nil || !release.Held || release.Status != http.StatusOK || release.Forwarded.Sub(release.Arrived) < 150*time.Millisecond {
		t.Fatalf("release record %+v: want held, forwarded ≥ 200 ms after arrival, status 200", release)
	}
	var buf bytes.Buffer
	if err := hp.Requests().WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	n := 0
	for sc := bufio.NewScanner(&buf); sc.Scan(); n++ {
		var r RequestRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Arrived.IsZero() {
			t.Fatalf("line %d %q: %v", n+1, sc.Text(), err)
		}
	}
	if n != len(recs) {
		t.Fatalf("dump has %d lines, ring %d records", n, len(recs))
	}
}

// The proxy keeps every renew storage granted, apart from the ring, so the
// checker can find a killed leader's last granted renew however much other
// traffic followed; a refused renew is not one.
func TestHTTPProxy_KeepsTheRenewsStorageGranted(t *testing.T) {
	direct, hp := fixtureHTTP(t)
	holder := heldVia(t, hp, direct)
	if _, err := holder.RenewLease(ctxT(t, 5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	other := leaseVia(t, hp.Addr(), direct, "leader")
	if _, err := other.RenewLease(ctxT(t, 5*time.Second), nil); err == nil {
		t.Fatal("a renew with another lease ID was granted")
	}
	recs, _ := hp.GrantedRenews().Records()
	if len(recs) != 1 || recs[0].Op != OpRenew || recs[0].Status != http.StatusOK || recs[0].Answered.Before(recs[0].Arrived) {
		t.Fatalf("granted renews %+v: want the one renew storage answered 200, arrived ≤ answered", recs)
	}
}
