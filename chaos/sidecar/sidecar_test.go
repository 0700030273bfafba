package sidecar

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/dialer"
	"github.com/blobleader/blobleader/worker/stalltest"
)

var az *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &az) }

var containerSeq atomic.Int64

// control returns a fresh control container on Azurite.
func control(t *testing.T) *container.Client {
	t.Helper()
	name := fmt.Sprintf("chaos%d", containerSeq.Add(1))
	c, err := container.NewClientFromConnectionString(az.ConnectionString(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctxT(t, 10*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fakeHost stands for the storage account's host name; it never resolves.
const fakeHost = "stfake.blob.core.windows.invalid"

// storageTLS is a local HTTPS server with a certificate for fakeHost only,
// standing in for the storage endpoint. It records the SNI of each request.
func storageTLS(t *testing.T) (*httptest.Server, *x509.CertPool, *atomic.Value) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: fakeHost}, DNSNames: []string{fakeHost},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
		io.WriteString(w, "lease renewed")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pool, &sni
}

// get is one worker request through the sidecar; it returns how long it took.
func get(ctx context.Context, c *http.Client) (time.Duration, error) {
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+fakeHost+"/leases/leader?comp=lease", nil)
	resp, err := c.Do(req)
	if err != nil {
		return time.Since(start), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && string(b) != "lease renewed" {
		err = fmt.Errorf("unexpected body %q", b)
	}
	return time.Since(start), err
}

func TestOffline_StoreReadsAndWritesControlBlobsOnAzurite(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	s := &Store{C: control(t), Name: "ci-w-01"}
	p, tag, changed, err := s.ReadPlan(ctx, "")
	if err != nil || changed || tag != "" || p.Version != 0 {
		t.Fatalf("missing plan: %+v %q changed=%v err=%v, want the empty plan, unchanged", p, tag, changed, err)
	}
	want := Plan{Version: 7, Expires: time.Now().Add(time.Hour).UTC().Round(0), Faults: []PlanFault{{ID: "latency-1", Kind: chaos.KindLatency, Params: []byte(`{"latency":300,"jitter":0,"stream":"both","toxicity":0}`)}}}
	if err := s.WritePlan(ctx, want); err != nil {
		t.Fatal(err)
	}
	p, tag, changed, err = s.ReadPlan(ctx, "")
	if err != nil || !changed || tag == "" {
		t.Fatalf("written plan: changed=%v tag=%q err=%v", changed, tag, err)
	}
	if p.Version != 7 || !p.Expires.Equal(want.Expires) || len(p.Faults) != 1 || !p.Faults[0].same(want.Faults[0]) {
		t.Fatalf("read back %+v, want %+v", p, want)
	}
	// The same ETag: not modified, nothing downloaded.
	if _, tag2, changed, err := s.ReadPlan(ctx, tag); err != nil || changed || tag2 != tag {
		t.Fatalf("unchanged plan: changed=%v tag %q→%q err=%v", changed, tag, tag2, err)
	}
	// A malformed plan is a plan error, not a storage error.
	if _, err := s.C.NewBlockBlobClient(PlanBlob("ci-w-01")).UploadBuffer(ctx, []byte("{not json"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.ReadPlan(ctx, tag); !errors.Is(err, ErrPlan) {
		t.Fatalf("malformed plan: %v, want ErrPlan", err)
	}
	// A deleted plan after one was seen is a change to the empty plan.
	if _, err := s.C.NewBlobClient(PlanBlob("ci-w-01")).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if p, _, changed, err := s.ReadPlan(ctx, tag); err != nil || !changed || len(p.Faults) != 0 {
		t.Fatalf("deleted plan: %+v changed=%v err=%v, want the empty plan as a change", p, changed, err)
	}
	if _, ok, err := s.ReadState(ctx); ok || err != nil {
		t.Fatalf("missing state: ok=%v err=%v", ok, err)
	}
	st := State{Name: "ci-w-01", Version: 7, Faults: []string{"latency-1"}, Upstream: 10, At: time.Now().UTC()}
	if err := s.WriteState(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.ReadState(ctx)
	if err != nil || !ok || got.Version != 7 || got.Upstream != 10 || len(got.Faults) != 1 {
		t.Fatalf("state read back %+v ok=%v err=%v", got, ok, err)
	}
}

// The whole path of an Azure network fault, offline: a worker's client dials
// the sidecar's loopback proxy (--storage-dial), TLS verifies the storage
// host through it, and faults the harness writes into the plan blob (on
// Azurite) show up on that worker's requests, then go away.
func TestOffline_SidecarAppliesThePlanToTheWorkersTLSTraffic(t *testing.T) {
	srv, pool, sni := storageTLS(t)
	px, err := chaos.NewLoopbackProxy("ci-w-01", "127.0.0.1:0", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	worker, err := dialer.Client(px.Addr(), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.CloseIdleConnections()

	cc := control(t)
	runCtx, stop := context.WithCancel(context.Background())
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"identity":"ci-w-01","role":"leader","term":4,"leader":"ci-w-01","leaseDuration":"15s","since":"2026-11-21T06:00:00Z"}`)
	}))
	defer status.Close()
	sc := &Sidecar{Proxy: px, Store: &Store{C: cc, Name: "ci-w-01"}, Poll: 50 * time.Millisecond, StatusURL: status.URL + "/status"}
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() { defer wg.Done(); runErr = sc.Run(runCtx) }()
	defer func() { stop(); wg.Wait() }()

	if _, err := get(ctxT(t, 5*time.Second), worker); err != nil {
		t.Fatalf("request through the sidecar without faults: %v", err)
	}
	if got := sni.Load(); got != fakeHost {
		t.Fatalf("storage saw SNI %q, want %q (TLS must verify the storage host through the proxy)", got, fakeHost)
	}

	ctl := &Controller{Store: &Store{C: cc, Name: "ci-w-01"}, Poll: 20 * time.Millisecond}
	lat := &Remote{Fault: &chaos.Latency{Latency: 250, Stream: chaos.Both}, Controller: ctl, Worker: "ci-w-01"}
	if lat.Kind() != chaos.KindLatency || lat.Target() != "ci-w-01" {
		t.Fatalf("remote fault is %s on %q", lat.Kind(), lat.Target())
	}
	if err := lat.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	took, err := get(ctxT(t, 10*time.Second), worker)
	if err != nil {
		t.Fatalf("request under latency: %v", err)
	}
	if took < 500*time.Millisecond { // 250 ms each way
		t.Fatalf("request took %v under 250 ms latency on both streams, want ≥ 500ms", took)
	}

	part := &Remote{Fault: &chaos.Partition{}, Controller: ctl, Worker: "ci-w-01"}
	if err := part.Inject(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctxT(t, 1500*time.Millisecond), worker); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request during the partition: %v, want it to hang until its deadline", err)
	}
	if err := part.Remove(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := lat.Remove(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctxT(t, 5*time.Second), worker); err != nil {
		t.Fatalf("request after healing: %v", err)
	}
	st, ok, err := ctl.Store.ReadState(ctxT(t, 5*time.Second))
	if err != nil || !ok || len(st.Faults) != 0 || st.Error != "" {
		t.Fatalf("state after healing: %+v ok=%v err=%v, want no faults and no error", st, ok, err)
	}
	if !strings.Contains(string(st.Worker), `"role":"leader"`) || st.WorkerAt.IsZero() || st.WorkerError != "" {
		t.Fatalf("state relays worker status %s at %v (error %q), want the worker's /status", st.Worker, st.WorkerAt, st.WorkerError)
	}
	if st.Upstream == 0 || st.Downstream == 0 {
		t.Fatalf("state counts %d bytes up, %d down; the worker's traffic must be visible", st.Upstream, st.Downstream)
	}

	// Non-network faults never reach a plan, and a plan naming one is
	// rejected by the sidecar with the reason.
	if _, err := ctl.Apply(ctxT(t, 5*time.Second), &chaos.Crash{}); !errors.Is(err, ErrPlan) {
		t.Fatalf("Apply(crash): %v, want ErrPlan", err)
	}
	bad := Plan{Version: time.Now().UnixNano(), Faults: []PlanFault{{ID: "x", Kind: chaos.KindCrash}}}
	if err := ctl.Store.WritePlan(ctxT(t, 5*time.Second), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.wait(ctxT(t, 10*time.Second), bad.Version); err == nil || !strings.Contains(err.Error(), "crash") {
		t.Fatalf("plan with a crash: %v, want the sidecar to reject it naming the kind", err)
	}

	// On stop the sidecar removes its faults and says so.
	if err := ctl.Store.WritePlan(ctxT(t, 5*time.Second), Plan{Version: time.Now().UnixNano(), Faults: []PlanFault{mustPlanFault(t, "l", &chaos.Latency{Latency: 50})}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plan's fault on the proxy", 10*time.Second, func() (bool, string) {
		return len(faultToxics(px)) > 0, fmt.Sprintf("toxics %v", px.Toxics())
	})
	stop()
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	if left := faultToxics(px); len(left) != 0 {
		t.Fatalf("toxics left after the sidecar stopped: %v", left)
	}
	st, _, _ = ctl.Store.ReadState(ctxT(t, 5*time.Second))
	if st.Error != "sidecar stopped" || len(st.Faults) != 0 {
		t.Fatalf("last state %+v, want no faults and the stop noted", st)
	}
}

// A plan the harness no longer renews expires: the sidecar drops its faults.
func TestOffline_SidecarDropsAnExpiredPlan(t *testing.T) {
	srv, _, _ := storageTLS(t)
	px, err := chaos.NewLoopbackProxy("ci-w-02", "127.0.0.1:0", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	store := &Store{C: control(t), Name: "ci-w-02"}
	sc := &Sidecar{Proxy: px, Store: store, Now: now}
	ctx := ctxT(t, 30*time.Second)
	plan := Plan{Version: 1, Expires: now().Add(time.Minute), Faults: []PlanFault{mustPlanFault(t, "p", &chaos.Partition{})}}
	if err := store.WritePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	sc.Step(ctx, 5*time.Second)
	if got := faultToxics(px); len(got) == 0 {
		t.Fatal("the partition was not applied")
	}
	sc.Step(ctx, 5*time.Second) // unchanged plan, not expired: still in place
	if got := faultToxics(px); len(got) == 0 {
		t.Fatal("an unchanged plan lost its fault")
	}
	clock.Add(int64(2 * time.Minute))
	sc.Step(ctx, 5*time.Second)
	if got := faultToxics(px); len(got) != 0 {
		t.Fatalf("toxics %v remain after the plan expired", got)
	}
	st, _, err := store.ReadState(ctx)
	if err != nil || !st.Expired || st.Version != 1 || len(st.Faults) != 0 {
		t.Fatalf("state %+v (err %v), want expired plan 1 with no faults", st, err)
	}
}

func TestOffline_ConfigNamesWhatIsWrong(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{"no name", []string{"--account-url", "https://st.blob.core.windows.net"}, env(), "--name"},
		{"no storage", []string{"--name", "w"}, env(), "--account-url"},
		{"public listen", []string{"--name", "w", "--account-url", "https://st.blob.core.windows.net", "--listen", "0.0.0.0:10443"}, env(), "loopback"},
		{"http account", []string{"--name", "w", "--account-url", "http://st.blob.core.windows.net"}, env(), "https"},
		{"bad env poll", nil, env("BLOBLEADER_CHAOS_NAME", "w", "BLOBLEADER_CHAOS_ACCOUNT_URL", "https://st.blob.core.windows.net", "BLOBLEADER_CHAOS_POLL", "soon"), "BLOBLEADER_CHAOS_POLL"},
		{"public stop url", []string{"--name", "w", "--account-url", "https://st.blob.core.windows.net", "--worker-stop", "http://10.0.0.4:8081/stop"}, env(), "--worker-stop"},
		{"request timeout too short", []string{"--name", "w", "--account-url", "https://st.blob.core.windows.net", "--request-timeout", "100ms"}, env(), "--request-timeout"},
		{"token timeout too short", []string{"--name", "w", "--account-url", "https://st.blob.core.windows.net", "--token-timeout", "0s"}, env(), "--token-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.args, tc.env, io.Discard)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig naming %q", err, tc.want)
			}
		})
	}
	c, err := ParseConfig([]string{"--name", "flag-wins"}, env("BLOBLEADER_CHAOS_NAME", "env", "BLOBLEADER_CHAOS_ACCOUNT_URL", "https://st.blob.core.windows.net/"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "flag-wins" || c.Upstream != "st.blob.core.windows.net:443" || c.Listen != "127.0.0.1:10443" || c.Container != "chaos" {
		t.Fatalf("config %+v: want the flag over the env, upstream from the account URL on 443, loopback listen, container chaos", c)
	}
	// A slow token endpoint must not starve the sidecar: the request timeout
	// is seconds whatever the poll, and the first token gets minutes.
	if c.RequestTimeout < 5*time.Second || c.TokenTimeout < time.Minute || c.WorkerStop != "http://127.0.0.1:8081/stop" {
		t.Fatalf("defaults %+v: want a request timeout of several seconds, minutes for the first token, the worker's stop URL on 8081", c)
	}
}

// Main runs the sidecar program end to end on Azurite and stops cleanly.
func TestOffline_MainRunsAndStopsCleanly(t *testing.T) {
	srv, _, _ := storageTLS(t)
	cc := control(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out strings.Builder
	var mu sync.Mutex
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"--name", "ci-w-03", "--listen", "127.0.0.1:0", "--upstream", srv.Listener.Addr().String(),
			"--connection-string", az.ConnectionString(), "--container", containerNameOf(cc), "--poll", "100ms", "--worker-status="},
			func(string) (string, bool) { return "", false }, lockedWriter{&mu, &out})
	}()
	store := &Store{C: cc, Name: "ci-w-03"}
	waitFor(t, "the sidecar's state blob", 20*time.Second, func() (bool, string) {
		_, ok, err := store.ReadState(context.Background())
		return ok, fmt.Sprintf("found %v, err %v", ok, err)
	})
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("exit %d, want 0; output:\n%s", c, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sidecar did not stop within 10s of its context ending")
	}
	if code := Main(context.Background(), []string{"--name", "x"}, func(string) (string, bool) { return "", false }, io.Discard); code != 2 {
		t.Fatalf("exit %d for a configuration without storage, want 2", code)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func containerNameOf(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndexByte(u, '/')+1:]
}

func mustPlanFault(t *testing.T, id string, f chaos.Fault) PlanFault {
	t.Helper()
	pf, err := NewPlanFault(id, f)
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// faultToxics are the proxy's toxics other than the traffic counters.
func faultToxics(p *chaos.Proxy) []string {
	var out []string
	for _, n := range p.Toxics() {
		if !strings.HasPrefix(n, "count_") {
			out = append(out, n)
		}
	}
	return out
}

// waitFor polls cond until it holds: for d plus the stall a probe of this
// machine and of the package's Azurite, running for the wait, measured
// meanwhile (stalltest's Probe.Await: at most 3×, then inconclusive, a
// failure, never a pass).
func waitFor(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	stalltest.Await(t, stalltest.Config{Server: az.BlobEndpoint()}, what, d, cond)
}
