package lockapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/lockapi"
	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/stalltest"
)

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var seq atomic.Int64

// newAPI serves the API for store on a fresh container; each call is a
// replica when given the same container name.
func newAPI(t *testing.T, store, container, token string) *httptest.Server {
	t.Helper()
	srv, _ := newAPIServer(t, store, container, token)
	return srv
}

// newAPIServer is newAPI with the API itself.
func newAPIServer(t *testing.T, store, container, token string) (*httptest.Server, *lockapi.Server) {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: container, RequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mutex.DefaultConfig("lockapi-test")
	l, err := mutex.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	api := lockapi.New(l, lockapi.Config{Store: store, Token: token, MaxWait: 30 * time.Second}, cfg.JitteredRetryPeriod)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv, api
}

func freshContainer() string { return fmt.Sprintf("api%d-%d", time.Now().UnixNano()%1e9, seq.Add(1)) }

// call sends one request and returns the status and the body.
func call(t *testing.T, srv *httptest.Server, method, path, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// field reads one field of a JSON object answer.
func field(t *testing.T, body, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", body, err)
	}
	return m[name]
}

// Dapr's API reference examples, as printed there (path v1.0-alpha, store
// redisStore), and the same on v1.0-alpha1.
func TestAPI_DaprReferenceExamplesWorkUnchanged(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "redisStore", freshContainer(), "")
	for _, version := range []string{"v1.0-alpha", "v1.0-alpha1"} {
		code, body := call(t, srv, "POST", "/"+version+"/lock/redisStore", `{
        "resourceId": "lock1",
        "lockOwner": "vader",
        "expiryInSeconds": 60
      }`)
		if code != 200 || field(t, body, "success") != true || field(t, body, "term") == nil {
			t.Fatalf("%s lock = %d %s, want 200 success true with a term", version, code, body)
		}
		code, body = call(t, srv, "POST", "/"+version+"/unlock/redisStore", `{
        "resourceId": "lock1",
        "lockOwner": "vader"
      }`)
		if code != 200 || body != `{"status":0}` {
			t.Fatalf("%s unlock = %d %s, want 200 {\"status\":0}", version, code, body)
		}
	}
}

// Every answer of the contract, Dapr's exactly where Dapr defines it.
func TestAPI_ContractAnswers(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "")
	const lock, unlock, renew = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore", "/v1.0-alpha1/renew/lockstore"
	steps := []struct {
		name, method, path, body string
		code                     int
		want                     string // exact body; "" to check prefix instead
		prefix                   string
	}{
		{"vader locks", "POST", lock, `{"resourceId":"r1","lockOwner":"vader","expiryInSeconds":15}`, 200, "", `{"success":true,"term":`},
		{"luke finds it held", "POST", lock, `{"resourceId":"r1","lockOwner":"luke","expiryInSeconds":15}`, 200, `{"success":false}`, ""},
		{"luke cannot unlock it", "POST", unlock, `{"resourceId":"r1","lockOwner":"luke"}`, 200, `{"status":2}`, ""},
		{"luke cannot renew it", "POST", renew, `{"resourceId":"r1","lockOwner":"luke"}`, 200, `{"status":2}`, ""},
		{"vader renews", "POST", renew, `{"resourceId":"r1","lockOwner":"vader"}`, 200, `{"status":0}`, ""},
		{"read: locked, the last term, no holder", "GET", lock + "?resourceId=r1", "", 200, "", `{"lastTerm":`},
		{"vader unlocks", "POST", unlock, `{"resourceId":"r1","lockOwner":"vader"}`, 200, `{"status":0}`, ""},
		{"again: does not exist", "POST", unlock, `{"resourceId":"r1","lockOwner":"vader"}`, 200, `{"status":1}`, ""},
		{"never locked: does not exist", "POST", unlock, `{"resourceId":"r9","lockOwner":"vader"}`, 200, `{"status":1}`, ""},
		{"renew of no lock", "POST", renew, `{"resourceId":"r9","lockOwner":"vader"}`, 200, `{"status":1}`, ""},
		{"read of a free lock", "GET", lock + "?resourceId=r9", "", 200, `{"locked":false,"resourceId":"r9"}`, ""},
		{"snake_case and a string number", "POST", lock, `{"resource_id":"r2","lock_owner":"vader","expiry_in_seconds":"20"}`, 200, "", `{"success":true,"term":`},
		{"unknown fields are ignored", "POST", unlock, `{"resourceId":"r2","lockOwner":"vader","extra":[1]}`, 200, `{"status":0}`, ""},
		// Dapr's refusals, in Dapr's order and words.
		{"empty body", "POST", lock, ``, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ExpiryInSeconds is not positive in lock store lockstore"}`, ""},
		{"expiry 0", "POST", lock, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":0}`, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ExpiryInSeconds is not positive in lock store lockstore"}`, ""},
		{"no resourceId", "POST", lock, `{"lockOwner":"o","expiryInSeconds":15}`, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ResourceId is empty in lock store lockstore"}`, ""},
		{"no lockOwner", "POST", lock, `{"resourceId":"r","expiryInSeconds":15}`, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"LockOwner is empty in lock store lockstore"}`, ""},
		{"unlock without resourceId", "POST", unlock, `{"lockOwner":"o"}`, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ResourceId is empty in lock store lockstore"}`, ""},
		{"unknown store: lock", "POST", "/v1.0-alpha1/lock/other", `{"resourceId":"r","lockOwner":"o","expiryInSeconds":15}`, 400, `{"errorCode":"ERR_LOCK_STORE_NOT_FOUND","message":"lock store other not found"}`, ""},
		{"unknown store: unlock", "POST", "/v1.0-alpha1/unlock/other", `{"resourceId":"r","lockOwner":"o"}`, 400, `{"errorCode":"ERR_LOCK_STORE_NOT_FOUND","message":"lock store other not found"}`, ""},
		{"not JSON", "POST", lock, `{"resourceId":`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"failed deserializing HTTP body: `},
		{"expiry a fraction", "POST", lock, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":15.5}`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"failed deserializing HTTP body: field expiryInSeconds`},
		// Our rules, named.
		{"expiry below the lease range", "POST", lock, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":10}`, 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ExpiryInSeconds is 10 in lock store lockstore: must be between 15 and 60 (the lease storage grants; renew to hold longer)"}`, ""},
		{"expiry above the lease range", "POST", lock, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":61}`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ExpiryInSeconds is 61 in lock store lockstore: must be between 15 and 60`},
		{"wait too long", "POST", lock, `{"resourceId":"r","lockOwner":"o","expiryInSeconds":15,"waitSeconds":31}`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"waitSeconds is 31 in lock store lockstore: must be between 0 and 30`},
		{"owner storage cannot carry", "POST", lock, `{"resourceId":"r","lockOwner":"dårth","expiryInSeconds":15}`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"LockOwner in lock store lockstore: must be printable ASCII`},
		{"resource id too long", "POST", lock, `{"resourceId":"` + strings.Repeat("x", 1025) + `","lockOwner":"o","expiryInSeconds":15}`, 400, "", `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ResourceId is 1025 bytes`},
		{"read without resourceId", "GET", lock, "", 400, `{"errorCode":"ERR_MALFORMED_REQUEST","message":"ResourceId is empty in lock store lockstore"}`, ""},
		{"unlock by GET", "GET", unlock, "", 405, "", ""},
	}
	for _, s := range steps {
		code, body := call(t, srv, s.method, s.path, s.body)
		if code != s.code || (s.want != "" && body != s.want) || !strings.HasPrefix(body, s.prefix) {
			t.Fatalf("%s: %s %s = %d %s; want %d %s%s", s.name, s.method, s.path, code, body, s.code, s.want, s.prefix)
		}
	}
}

// Any replica renews or releases what another granted; a late unlock carrying
// the term of an ended holding never frees the same owner's later holding.
func TestAPI_StatelessReplicasAndLateUnlockWithTerm(t *testing.T) {
	t.Parallel()
	name := freshContainer()
	a, b := newAPI(t, "lockstore", name, ""), newAPI(t, "lockstore", name, "")
	const lock, unlock = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore"
	body := `{"resourceId":"acct-7","lockOwner":"worker-1","expiryInSeconds":15}`
	_, first := call(t, a, "POST", lock, body)
	t1 := field(t, first, "term").(float64)
	if _, got := call(t, b, "POST", unlock, fmt.Sprintf(`{"resourceId":"acct-7","lockOwner":"worker-1","term":%d}`, int64(t1))); got != `{"status":0}` {
		t.Fatalf("unlock through the other replica = %s", got)
	}
	_, second := call(t, b, "POST", lock, body) // the owner again, through the other replica: a later holding
	t2 := field(t, second, "term").(float64)
	if t2 <= t1 {
		t.Fatalf("terms %v then %v: the owner's second lock must be a later holding", t1, t2)
	}
	late := fmt.Sprintf(`{"resourceId":"acct-7","lockOwner":"worker-1","term":%d}`, int64(t1))
	if code, got := call(t, a, "POST", unlock, late); code != 200 || got != `{"status":2}` {
		t.Fatalf("late unlock with the ended term = %d %s, want {\"status\":2}", code, got)
	}
	if _, got := call(t, b, "GET", lock+"?resourceId=acct-7", ""); field(t, got, "locked") != true || field(t, got, "lastTerm") != t2 {
		t.Fatalf("after the late unlock: %s; want still locked at term %v", got, t2)
	}
	cur := fmt.Sprintf(`{"resourceId":"acct-7","lockOwner":"worker-1","term":%d}`, int64(t2))
	if code, got := call(t, a, "POST", unlock, cur); code != 200 || got != `{"status":0}` {
		t.Fatalf("unlock with the current term through the other replica = %d %s", code, got)
	}
}

// A waiting lock request gets the lock once the holder unlocks.
func TestAPI_WaitingLockGetsTheLockAfterTheUnlock(t *testing.T) {
	t.Parallel()
	stalltest.Run(t, func(t *testing.T, p *stalltest.Probe) {
		srv := newAPI(t, "lockstore", freshContainer(), "")
		const lock, unlock = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore"
		call(t, srv, "POST", lock, `{"resourceId":"q","lockOwner":"a","expiryInSeconds":15}`)
		go func() {
			time.Sleep(1500 * time.Millisecond)
			call(t, srv, "POST", unlock, `{"resourceId":"q","lockOwner":"a"}`)
		}()
		start := time.Now()
		code, body := call(t, srv, "POST", lock, `{"resourceId":"q","lockOwner":"b","expiryInSeconds":15,"waitSeconds":10}`)
		if code != 200 || field(t, body, "success") != true {
			t.Fatalf("waiting lock = %d %s, want success", code, body)
		}
		if !p.Bound(t, "a waiting lock (bound: the unlock at 1.5 s + a poll 1.1 s + a request 2 s)", start, 1500*time.Millisecond+1100*time.Millisecond+2*time.Second, time.Now()) {
			return
		}
		// Without a wait, a held lock answers at once.
		start = time.Now()
		if _, body := call(t, srv, "POST", lock, `{"resourceId":"q","lockOwner":"c","expiryInSeconds":15}`); body != `{"success":false}` {
			t.Fatalf("lock of a held lock = %s", body)
		}
		p.Bound(t, "a lock without waitSeconds (bound: one request, 2 s)", start, 2*time.Second, time.Now())
	})
}

func TestAPI_TokenIsRequiredWhenSet(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "s3cret")
	const lock = "/v1.0-alpha1/lock/lockstore"
	body := `{"resourceId":"t","lockOwner":"o","expiryInSeconds":15}`
	for _, tc := range []struct {
		name   string
		header []string
		code   int
	}{
		{"none", nil, 401},
		{"wrong bearer", []string{"Authorization", "Bearer nope"}, 401},
		{"bearer", []string{"Authorization", "Bearer s3cret"}, 200},
		{"dapr-api-token", []string{"dapr-api-token", "s3cret"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := call(t, srv, "POST", lock, body, tc.header...)
			if code != tc.code || strings.Contains(got, "s3cret") {
				t.Fatalf("%d %s, want %d and no token in the answer", code, got, tc.code)
			}
		})
	}
}

func TestLeaseID_IsDerivedAndDistinct(t *testing.T) {
	if lockapi.LeaseID("s", "r", "o") != lockapi.LeaseID("s", "r", "o") {
		t.Fatal("two replicas must derive the same lease ID")
	}
	seen := map[string]bool{}
	for _, tr := range [][3]string{{"s", "r", "o"}, {"s", "ro", ""}, {"s", "r", "o2"}, {"s2", "r", "o"}, {"s", "", "ro"}, {"sr", "", "o"}} {
		id := lockapi.LeaseID(tr[0], tr[1], tr[2])
		if seen[id] {
			t.Fatalf("%q shares a lease ID with another triple", tr)
		}
		seen[id] = true
	}
}

// Dapr's stores answer a second lock by the owner that holds it false; the
// owner frees it with unlock (or it expires) and locks again.
func TestAPI_SameOwnerLockingTwiceIsRefused(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "")
	const lock, unlock = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore"
	body := `{"resourceId":"twice","lockOwner":"vader","expiryInSeconds":15}`
	if _, got := call(t, srv, "POST", lock, body); field(t, got, "success") != true {
		t.Fatalf("first lock = %s", got)
	}
	if _, got := call(t, srv, "POST", lock, body); got != `{"success":false}` {
		t.Fatalf("the same owner's second lock = %s, want {\"success\":false}", got)
	}
	if _, got := call(t, srv, "POST", unlock, `{"resourceId":"twice","lockOwner":"vader"}`); got != `{"status":0}` {
		t.Fatalf("unlock = %s, want status 0", got)
	}
	if _, got := call(t, srv, "POST", lock, body); field(t, got, "success") != true {
		t.Fatalf("lock after the unlock = %s, want success", got)
	}
}

// A lock whose lease expired does not exist: renew and unlock answer 1,
// with the term or without, and neither revives it.
func TestAPI_ExpiredLockDoesNotExist(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, "lockstore", freshContainer(), "")
	const lock, unlock, renew = "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore", "/v1.0-alpha1/renew/lockstore"
	_, got := call(t, srv, "POST", lock, `{"resourceId":"exp","lockOwner":"vader","expiryInSeconds":15}`)
	term := int64(field(t, got, "term").(float64))
	time.Sleep(15500 * time.Millisecond) // the lease's own expiry: what is under test
	withTerm := fmt.Sprintf(`{"resourceId":"exp","lockOwner":"vader","term":%d}`, term)
	for _, s := range []struct{ name, path, body string }{
		{"renew with the term", renew, withTerm},
		{"unlock with the term", unlock, withTerm},
		{"renew", renew, `{"resourceId":"exp","lockOwner":"vader"}`},
		{"unlock", unlock, `{"resourceId":"exp","lockOwner":"vader"}`},
	} {
		if code, got := call(t, srv, "POST", s.path, s.body); code != 200 || got != `{"status":1}` {
			t.Fatalf("%s of an expired lock = %d %s, want {\"status\":1}", s.name, code, got)
		}
	}
	if _, got := call(t, srv, "POST", lock, `{"resourceId":"exp","lockOwner":"luke","expiryInSeconds":15}`); field(t, got, "success") != true {
		t.Fatalf("another owner's lock after the expiry = %s: the expired lock was revived", got)
	}
}
