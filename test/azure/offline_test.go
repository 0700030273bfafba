//go:build azure

package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	acifake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"golang.org/x/net/websocket"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/chaos/sidecar"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// --- The scenario list ---------------------------------------------------

// localScenarios reads what the local suite registers: every
// RunScenario(t, Local, X) in test/scenarios/*_test.go, with X's Name from
// the `X = Scenario{Name: "…"}` declarations. Reading the source (rather
// than a list) keeps this honest even if someone adds a local test and
// forgets an exported list.
func localScenarios(t *testing.T) []string {
	t.Helper()
	return registeredLocal(t, "Scenario", "RunScenario")
}

// registeredLocal is localScenarios for any scenario type: the Names of the
// `X = <typ>{Name: "…"}` declarations that test/scenarios runs with
// <run>(t, Local, X).
func registeredLocal(t *testing.T, typ, run string) []string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "test", "scenarios")
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // identifier → Scenario.Name
	var registered []string
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if i >= len(n.Values) {
							continue
						}
						if lit, ok := n.Values[i].(*ast.CompositeLit); ok && isIdent(lit.Type, typ) {
							for _, el := range lit.Elts {
								if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
									if s, ok := kv.Value.(*ast.BasicLit); ok {
										names[id.Name], _ = strconv.Unquote(s.Value)
									}
								}
							}
						}
					}
				case *ast.CallExpr:
					if isIdent(n.Fun, run) && len(n.Args) == 3 && isIdent(n.Args[1], "Local") {
						if id, ok := n.Args[2].(*ast.Ident); ok {
							registered = append(registered, id.Name)
						}
					}
				}
				return true
			})
		}
	}
	var out []string
	for _, id := range registered {
		name, ok := names[id]
		if !ok {
			t.Fatalf("the local suite runs %s, whose Scenario declaration was not found", id)
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// Both backends register the same scenarios; the Azure suite's skips are
// exactly the documented ones, each with its reason in the doc.
func TestOffline_SameScenariosAsTheLocalSuite(t *testing.T) {
	local := localScenarios(t)
	if len(local) < 10 {
		t.Fatalf("found only %d local scenarios (%v); the parser is missing some", len(local), local)
	}
	var azure, skipped []string
	for _, s := range Scenarios() {
		azure = append(azure, s.Name)
		if s.Skip != "" {
			skipped = append(skipped, s.Name)
		}
	}
	sort.Strings(azure)
	if strings.Join(azure, ",") != strings.Join(local, ",") {
		t.Fatalf("the Azure suite registers %v, the local suite %v", azure, local)
	}
	sort.Strings(skipped)
	if want := "BlockedOutputLeaderStepsDown,LateReleaseFromEndedLeadership,LedgerPoisoned,LockContainerDeleted,LostAnswersOnAcquireAndTermWrite,PausedLeaderStepsDown,StorageRefusesTheLeader"; strings.Join(skipped, ",") != want {
		t.Fatalf("skipped on Azure: %v; the documented skips are %s", skipped, want)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "testing-on-azure.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Scenarios() {
		if s.Skip != "" && (!strings.Contains(string(doc), s.Name) || !strings.Contains(string(doc), s.Skip)) {
			t.Errorf("docs/testing-on-azure.md does not document the skip of %s with its reason %q", s.Name, s.Skip)
		}
	}
}

// --- Preflight -------------------------------------------------------------

type fakeHost struct {
	env      map[string]string
	path     map[string]bool
	azCalled bool
	azOK     bool
}

func (h *fakeHost) probe() Probe {
	return Probe{
		Lookup: func(k string) (string, bool) { v, ok := h.env[k]; return v, ok },
		LookPath: func(f string) (string, error) {
			if h.path[f] {
				return "/usr/bin/" + f, nil
			}
			return "", errors.New("not found")
		},
		AzSignedIn: func() bool { h.azCalled = true; return h.azOK },
	}
}

func TestOffline_PreflightNamesEverythingMissingInOneLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    fakeHost
		want    []string
		wantAz  bool
		wantErr bool
	}{
		{name: "nothing", host: fakeHost{path: map[string]bool{"go": true}}, wantErr: true,
			want: []string{"nothing was created", "ARM_SUBSCRIPTION_ID", "Azure credentials", "terraform"}},
		{name: "az signed out", host: fakeHost{env: map[string]string{"ARM_SUBSCRIPTION_ID": "s"}, path: map[string]bool{"go": true, "az": true, "terraform": true}},
			wantErr: true, wantAz: true, want: []string{"az login"}},
		{name: "az signed in", host: fakeHost{env: map[string]string{"ARM_SUBSCRIPTION_ID": "s"}, path: map[string]bool{"go": true, "az": true, "terraform": true}, azOK: true},
			wantAz: true},
		{name: "service principal", host: fakeHost{env: map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_CLIENT_ID": "c", "ARM_TENANT_ID": "t", "ARM_CLIENT_SECRET": "x"}, path: map[string]bool{"go": true, "terraform": true}}},
		{name: "bad skew", host: fakeHost{env: map[string]string{"ARM_SUBSCRIPTION_ID": "s", "AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t", "AZURE_FEDERATED_TOKEN_FILE": "/f", EnvClockSkew: "1h"}, path: map[string]bool{"go": true, "terraform": true}},
			wantErr: true, want: []string{EnvClockSkew}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := LoadEnv(tc.host.probe())
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "test-azure: cannot run") {
					t.Errorf("not one clear line: %q", msg)
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q does not name %q", msg, w)
					}
				}
			} else if env.ClockSkew != 250*time.Millisecond || env.Workers != 3 || env.Location != "eastus" {
				t.Errorf("defaults %+v, want skew 250ms, 3 workers, eastus", env)
			}
			if tc.host.azCalled != tc.wantAz {
				t.Errorf("az consulted = %v, want %v", tc.host.azCalled, tc.wantAz)
			}
		})
	}
}

// --- Terraform variables ----------------------------------------------------

func TestOffline_TerraformVarsMatchInfra(t *testing.T) {
	env := Env{Location: "swedencentral", Workers: 3}
	declared := map[string]bool{}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "infra", "variables.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^variable "([a-z_]+)"`).FindAllStringSubmatch(string(b), -1) {
		declared[m[1]] = true
	}
	postfix := NewPostfix()
	if !regexp.MustCompile(`^[a-z][a-z0-9]{5}$`).MatchString(postfix) || postfix == NewPostfix() {
		t.Fatalf("postfix %q: want 6 random lower-case characters starting with a letter", postfix)
	}
	stage1, err := TerraformVars(env, postfix, "11111111-1111-1111-1111-111111111111", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range stage1 {
		if !declared[k] {
			t.Errorf("variable %q is not declared in infra/variables.tf", k)
		}
	}
	if stage1["image_digest"] != "" || stage1["chaos_sidecar"].(map[string]any)["enabled"] != false ||
		stage1["resource_group_name"] != "rg-blobleader-test-"+postfix || stage1["name_prefix"] != "bl"+postfix {
		t.Fatalf("stage 1 vars %v: want no digest, no sidecar, names with the postfix", stage1)
	}
	d := "sha256:" + strings.Repeat("ab", 32)
	stage2, err := TerraformVars(env, postfix, "11111111-1111-1111-1111-111111111111", &Images{Worker: "cr.azurecr.io/blobleader/worker@" + d, Sidecar: "cr.azurecr.io/blobleader/chaos@" + d})
	if err != nil {
		t.Fatal(err)
	}
	cs := stage2["chaos_sidecar"].(map[string]any)
	if stage2["image_digest"] != d || cs["enabled"] != true || cs["image"] != "cr.azurecr.io/blobleader/chaos@"+d ||
		fmt.Sprint(cs["controller_principal_ids"]) != "[11111111-1111-1111-1111-111111111111]" {
		t.Fatalf("stage 2 vars %v: want the worker digest and the sidecar with the harness as controller", stage2)
	}
	if _, err := TerraformVars(env, postfix, "x", &Images{Worker: "cr.azurecr.io/w:latest", Sidecar: "cr.azurecr.io/c:latest"}); err == nil {
		t.Error("tags instead of digests were accepted")
	}
	env.ExtraVars = `{"zones":[],"storage_replication_type":"LRS"}`
	v, err := TerraformVars(env, postfix, "x", nil)
	if err != nil || v["storage_replication_type"] != "LRS" {
		t.Fatalf("extra vars: %v %v", v, err)
	}
	env.ExtraVars = `zones=[]`
	if _, err := TerraformVars(env, postfix, "x", nil); err == nil || !strings.Contains(err.Error(), EnvTFVars) {
		t.Fatalf("malformed extra vars: %v, want an error naming %s", err, EnvTFVars)
	}
}

// --- ACI exec ------------------------------------------------------------------

// execServer is a stand-in for ACI's exec websocket: it demands the password
// as the first message, then sends the command's output in pieces and closes.
func execServer(t *testing.T, password, output string) string {
	t.Helper()
	srv := httptest.NewServer(websocket.Handler(func(ws *websocket.Conn) {
		defer ws.Close()
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != password {
			return // wrong password: close without output
		}
		half := len(output) / 2
		websocket.Message.Send(ws, []byte(output[:half]))
		websocket.Message.Send(ws, output[half:])
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/exec"
}

func containersClient(t *testing.T, uri, password string, calls *[]string) *armcontainerinstance.ContainersClient {
	t.Helper()
	srv := acifake.ContainersServer{
		ExecuteCommand: func(_ context.Context, rg, group, ctr string, req armcontainerinstance.ContainerExecRequest, _ *armcontainerinstance.ContainersClientExecuteCommandOptions) (resp azfake.Responder[armcontainerinstance.ContainersClientExecuteCommandResponse], errResp azfake.ErrorResponder) {
			*calls = append(*calls, fmt.Sprintf("%s/%s/%s %s", rg, group, ctr, *req.Command))
			if req.TerminalSize == nil || *req.TerminalSize.Cols < 80 {
				errResp.SetResponseError(http.StatusBadRequest, "InvalidTerminalSize")
				return
			}
			resp.SetResponse(http.StatusOK, armcontainerinstance.ContainersClientExecuteCommandResponse{
				ContainerExecResponse: armcontainerinstance.ContainerExecResponse{WebSocketURI: &uri, Password: &password},
			}, nil)
			return
		},
	}
	c, err := armcontainerinstance.NewContainersClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: acifake.NewContainersServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const statusJSON = `{"identity":"ci-bl-worker-01","role":"leader","term":3,"leader":"ci-bl-worker-01","leaseDuration":"15s","since":"2026-11-21T07:00:00Z"}`

func TestOffline_ExecAsksTheWorkerThroughARMAndTheWebsocket(t *testing.T) {
	var calls []string
	uri := execServer(t, "one-time", "\x1b[?2004h"+statusJSON+"\r\n")
	ex := &ACIExec{Containers: containersClient(t, uri, "one-time", &calls), ResourceGroup: "rg-test"}
	out, err := ex.Exec(ctxT(t, 10*time.Second), "ci-bl-worker-01", "worker", StatusCommand)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStatus(out)
	if err != nil || st.Role != "leader" || st.Term != 3 || st.Identity != "ci-bl-worker-01" {
		t.Fatalf("status %+v, %v from %q", st, err, out)
	}
	if len(calls) != 1 || calls[0] != "rg-test/ci-bl-worker-01/worker /status" {
		t.Fatalf("ARM calls %v", calls)
	}
	// A server that does not accept the password gives no status.
	bad := &ACIExec{Containers: containersClient(t, execServer(t, "other", statusJSON), "one-time", &calls), ResourceGroup: "rg-test"}
	out, err = bad.Exec(ctxT(t, 10*time.Second), "ci-bl-worker-01", "worker", StatusCommand)
	if _, perr := ParseStatus(out); err == nil && perr == nil {
		t.Fatalf("a rejected password still produced a status: %q", out)
	}
}

func TestOffline_ParseStatusRejectsNoise(t *testing.T) {
	for _, out := range []string{"", "worker: status: connection refused\r\n", `{"role":"leader"}`, "{not json}"} {
		if _, err := ParseStatus(out); err == nil {
			t.Errorf("ParseStatus(%q) accepted it", out)
		}
	}
}

// --- Registry token --------------------------------------------------------

type jwtCred struct{ claims string }

func (c jwtCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	enc := base64.RawURLEncoding.EncodeToString
	return azcore.AccessToken{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(c.claims)) + ".sig", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestOffline_RegistryTokenExchange(t *testing.T) {
	cred := jwtCred{`{"tid":"tenant-1","oid":"22222222-2222-2222-2222-222222222222"}`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/oauth2/exchange" {
			http.Error(w, "wrong endpoint", http.StatusNotFound)
			return
		}
		r.ParseForm()
		if r.Form.Get("grant_type") != "access_token" || r.Form.Get("tenant") != "tenant-1" ||
			r.Form.Get("service") != "127.0.0.1" || !strings.Contains(r.Form.Get("access_token"), ".") {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"refresh_token":"acr-refresh"}`)
	}))
	defer srv.Close()
	tok, err := RegistryToken(ctxT(t, 5*time.Second), srv.Client(), cred, srv.URL)
	if err != nil || tok != "acr-refresh" {
		t.Fatalf("token %q, %v", tok, err)
	}
	if _, err := RegistryToken(ctxT(t, 5*time.Second), srv.Client(), jwtCred{`{"tid":"other"}`}, srv.URL); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("refused exchange: %v, want the 401", err)
	}
	oid, err := ObjectID(ctxT(t, time.Second), cred)
	if err != nil || oid != "22222222-2222-2222-2222-222222222222" {
		t.Fatalf("object id %q, %v", oid, err)
	}
}

// --- The backend: fault translation, injection and status ---------------------

// fakeGroups is an ARM container-groups endpoint for the named groups.
type fakeGroups struct {
	mu    sync.Mutex
	state map[string]string
	calls []string
}

func (g *fakeGroups) client(t *testing.T) *armcontainerinstance.ContainerGroupsClient {
	t.Helper()
	known := func(name string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		_, ok := g.state[name]
		return ok
	}
	set := func(op, name, st string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.calls = append(g.calls, op+" "+name)
		if st != "" {
			g.state[name] = st
		}
	}
	srv := acifake.ContainerGroupsServer{
		Get: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientGetOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientGetResponse], errResp azfake.ErrorResponder) {
			if !known(name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			g.mu.Lock()
			st := g.state[name]
			g.mu.Unlock()
			var r armcontainerinstance.ContainerGroupsClientGetResponse
			r.Properties = &armcontainerinstance.ContainerGroupPropertiesProperties{InstanceView: &armcontainerinstance.ContainerGroupPropertiesInstanceView{State: &st}}
			resp.SetResponse(http.StatusOK, r, nil)
			return
		},
		Stop: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientStopOptions) (resp azfake.Responder[armcontainerinstance.ContainerGroupsClientStopResponse], errResp azfake.ErrorResponder) {
			if !known(name) {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			set("stop", name, chaos.ACIStopped)
			resp.SetResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStopResponse{}, nil)
			return
		},
		BeginStart: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientBeginStartOptions) (resp azfake.PollerResponder[armcontainerinstance.ContainerGroupsClientStartResponse], errResp azfake.ErrorResponder) {
			set("start", name, chaos.ACIRunning)
			resp.SetTerminalResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientStartResponse{}, nil)
			return
		},
		BeginRestart: func(_ context.Context, _, name string, _ *armcontainerinstance.ContainerGroupsClientBeginRestartOptions) (resp azfake.PollerResponder[armcontainerinstance.ContainerGroupsClientRestartResponse], errResp azfake.ErrorResponder) {
			set("restart", name, chaos.ACIRunning)
			resp.SetTerminalResponse(http.StatusNoContent, armcontainerinstance.ContainerGroupsClientRestartResponse{}, nil)
			return
		},
	}
	c, err := armcontainerinstance.NewContainerGroupsClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: acifake.NewContainerGroupsServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	azOnce sync.Once
	az     *azuritetest.Server
	azErr  error
)

// sharedAzurite is one Azurite for this package's tests (stopped by TestMain).
func sharedAzurite(t *testing.T) *azuritetest.Server {
	t.Helper()
	azOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		az, azErr = azuritetest.Start(ctx)
	})
	if azErr != nil {
		t.Fatalf("this test needs Azurite: %v", azErr)
	}
	return az
}

func TestMain(m *testing.M) {
	code := m.Run()
	if az != nil {
		az.Stop()
	}
	os.Exit(code)
}

var containerSeq sync.Mutex
var containerN int

func newContainer(t *testing.T, prefix string) *container.Client {
	t.Helper()
	containerSeq.Lock()
	containerN++
	name := fmt.Sprintf("%s%d", prefix, containerN)
	containerSeq.Unlock()
	c, err := container.NewClientFromConnectionString(sharedAzurite(t).ConnectionString(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctxT(t, 10*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

type fakeExec struct {
	mu       sync.Mutex
	calls    int
	commands []string
	out      string
}

// Exec answers like the worker image would: only its /status entry point
// prints a status (ACI runs the command string as one executable name).
func (f *fakeExec) Exec(_ context.Context, group, ctr, cmd string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.commands = append(f.commands, cmd)
	if ctr != "worker" || cmd != "/status" {
		return "", fmt.Errorf("unexpected exec %s %s %q: no such file in the worker image", group, ctr, cmd)
	}
	return strings.ReplaceAll(f.out, "GROUP", group), nil
}

func testCluster(t *testing.T, groups *fakeGroups, ex Execer) *Cluster {
	t.Helper()
	var names []string
	for n := range groups.state {
		names = append(names, n)
	}
	sort.Strings(names)
	c, err := New(Config{
		ResourceGroup: "rg-test", StorageAccount: "sttest", Groups: names, Sidecar: true,
		Poll: 5 * time.Millisecond, Dir: t.TempDir(), Logf: t.Logf,
		GroupsClient: groups.client(t), Exec: ex,
		Leases: newContainer(t, "leases"), History: newContainer(t, "history"), Control: newContainer(t, "chaos"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOffline_ClusterTranslatesTheScenarioFaults(t *testing.T) {
	groups := &fakeGroups{state: map[string]string{"ci-w-01": chaos.ACIRunning, "ci-w-02": chaos.ACIRunning}}
	c := testCluster(t, groups, nil)
	w := c.Workers()[0]
	for _, tc := range []struct {
		asked  chaos.Fault
		target cluster.Worker
		want   string
	}{
		{&chaos.Crash{Restart: true}, w, "*chaos.AzureCrash"},
		{&chaos.Stop{Restart: true}, w, "*sidecar.RemoteStop"},
		{&chaos.Latency{Latency: 300}, w, "*sidecar.Remote"},
		{&chaos.Timeout{}, w, "*sidecar.Remote"},
		{&chaos.Reset{}, w, "*sidecar.Remote"},
		{&chaos.Partition{}, w, "*sidecar.Remote"},
		{&chaos.BreakLease{}, nil, "*chaos.BreakLease"},
	} {
		real, err := c.Translate(tc.asked, tc.target)
		if err != nil || fmt.Sprintf("%T", real) != tc.want || real.Kind() != tc.asked.Kind() {
			t.Errorf("%T → %T (%v), want %s of the same kind", tc.asked, real, err, tc.want)
			continue
		}
		if tc.target != nil && real.Target() != "ci-w-01" {
			t.Errorf("%T targets %q, want the group ci-w-01 (the worker's identity)", tc.asked, real.Target())
		}
	}
	if _, err := c.Translate(&chaos.Pause{}, w); !errors.Is(err, chaos.ErrUnsupported) || !strings.Contains(err.Error(), chaos.ACIPauseReason) {
		t.Errorf("pause: %v, want ErrUnsupported with the reason", err)
	}
	if _, err := c.Translate(&chaos.Outage{}, nil); !errors.Is(err, chaos.ErrNoTarget) {
		t.Errorf("outage without an accounts client: %v, want ErrNoTarget", err)
	}
	if _, err := c.Translate(&chaos.Crash{}, nil); !errors.Is(err, chaos.ErrNoTarget) {
		t.Errorf("crash without a target: %v, want ErrNoTarget", err)
	}
	if _, err := c.Start(ctxT(t, time.Second), 1, cluster.Unsafe()); err == nil {
		t.Error("Start with worker options on a deployed cluster: want an error")
	}
}

// A scenario's crash goes through ARM (stop, then start on Remove), is
// recorded under the group's name from before the stop, and the worker is
// not running in between.
func TestOffline_ClusterCrashAndHealThroughARM(t *testing.T) {
	groups := &fakeGroups{state: map[string]string{"ci-w-01": chaos.ACIRunning, "ci-w-02": chaos.ACIRunning}}
	c := testCluster(t, groups, nil)
	w := c.Workers()[1]
	crash := &chaos.Crash{Restart: true}
	before := time.Now()
	if err := c.Inject(ctxT(t, 10*time.Second), crash, w); err != nil {
		t.Fatal(err)
	}
	if w.Running() {
		t.Fatal("a crashed worker reports Running")
	}
	recs := c.Faults()
	if len(recs) != 1 || recs[0].Kind != "crash" || recs[0].Target != "ci-w-02" || recs[0].Start.Before(before) || !recs[0].End.IsZero() {
		t.Fatalf("timeline %+v, want one open crash of ci-w-02", recs)
	}
	if err := c.Heal(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !w.Running() || c.Faults()[0].End.IsZero() {
		t.Fatalf("after Heal: running %v, record %+v", w.Running(), c.Faults()[0])
	}
	groups.mu.Lock()
	defer groups.mu.Unlock()
	if strings.Join(groups.calls, ",") != "stop ci-w-02,start ci-w-02" {
		t.Fatalf("ARM calls %v, want stop then start of ci-w-02 only", groups.calls)
	}
}

// ACI's exec API cannot pass arguments: the command string is run as one
// executable name (Microsoft's exec doc, "Restrictions"; azure-cli issue
// 10039). So the command the suite sends for a worker's status is one word,
// the image's /status entry point (infra/image links it to the binary,
// which dispatches on argv[0]).
func TestOffline_StatusExecIsOneWord(t *testing.T) {
	groups := &fakeGroups{state: map[string]string{"ci-w-01": chaos.ACIRunning}}
	ex := &fakeExec{out: statusJSON}
	c := testCluster(t, groups, ex)
	if _, err := c.Workers()[0].Status(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("status through exec: %v (commands sent: %q)", err, ex.commands)
	}
	if len(ex.commands) != 1 {
		t.Fatalf("exec commands %q, want one", ex.commands)
	}
	if cmd := ex.commands[0]; strings.ContainsAny(cmd, " \t\n") || !strings.HasPrefix(cmd, "/") {
		t.Fatalf("the suite sends %q through ACI exec: it must be one absolute path without spaces", cmd)
	}
	// ACIExec itself refuses a command ACI would misread, before any ARM call.
	var calls []string
	ex2 := &ACIExec{Containers: containersClient(t, "ws://127.0.0.1:1/x", "pw", &calls), ResourceGroup: "rg-test"}
	if _, err := ex2.Exec(ctxT(t, 5*time.Second), "ci-w-01", "worker", "/blobleader status"); err == nil || len(calls) != 0 {
		t.Fatalf("ACIExec with a command holding a space: err %v, ARM calls %v; want a refusal and no call", err, calls)
	}
}

// Status comes from the sidecar's relayed /status while it is fresh, and
// through exec when it is stale or missing.
func TestOffline_StatusRelayedFreshElseExec(t *testing.T) {
	groups := &fakeGroups{state: map[string]string{"ci-w-01": chaos.ACIRunning}}
	ex := &fakeExec{out: `{"identity":"GROUP","role":"follower","term":2,"leader":"x","leaseDuration":"15s","since":"2026-11-21T07:00:00Z"}` + "\r\n"}
	c := testCluster(t, groups, ex)
	w := c.Workers()[0].(*worker)
	ctx := ctxT(t, 10*time.Second)

	st, err := w.Status(ctx) // no state yet: exec
	if err != nil || st.Role != "follower" || ex.calls != 1 {
		t.Fatalf("without a sidecar state: %+v %v (exec calls %d), want exec's follower", st, err, ex.calls)
	}
	fresh := sidecar.State{Name: "ci-w-01", Worker: []byte(strings.ReplaceAll(statusJSON, "ci-bl-worker-01", "ci-w-01")), WorkerAt: time.Now().UTC(), At: time.Now().UTC()}
	if err := w.ctl.Store.WriteState(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if st, err = w.Status(ctx); err != nil || st.Role != "leader" || ex.calls != 1 {
		t.Fatalf("with a fresh relayed status: %+v %v (exec calls %d), want the relayed leader without exec", st, err, ex.calls)
	}
	stale := fresh
	stale.WorkerAt = time.Now().Add(-time.Minute)
	if err := w.ctl.Store.WriteState(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if st, err = w.Status(ctx); err != nil || st.Role != "follower" || ex.calls != 2 {
		t.Fatalf("with a stale relayed status: %+v %v (exec calls %d), want exec", st, err, ex.calls)
	}
	// The scenarios' leader helpers see it.
	if got, err := c.FindLeader(50 * time.Millisecond); err == nil {
		t.Fatalf("FindLeader found %s although the only worker follows", got.Identity())
	}
}

// The histories the workers write with --history blob (worker/history's
// sink, on Azurite) come back through DownloadHistory and are judged by the
// same checker, with the clock-skew tolerance deciding a small overlap.
func TestOffline_HistoryFromBlobsJudgedWithClockSkew(t *testing.T) {
	hc := newContainer(t, "history")
	ctx := ctxT(t, 30*time.Second)
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	write := func(id string, evs ...election.Event) {
		b := history.OpenBlob(hc, id, t0, history.BlobOptions{FlushEvery: 10 * time.Millisecond})
		for _, ev := range evs {
			if err := b.Write(history.NewRecord(id, t0, ev)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const D = 10 * time.Second
	// w1 leads term 1 until its deadline t0+2s+D; w2 starts term 2 100 ms
	// before that (its clock runs 100 ms ahead).
	write("ci-w-01",
		election.Event{Kind: election.EventStartedLeading, Time: t0, Term: 1, ValidUntil: t0.Add(D)},
		election.Event{Kind: election.EventRenewed, Time: t0.Add(2 * time.Second), Term: 1, ValidUntil: t0.Add(2*time.Second + D)},
	)
	w2start := t0.Add(2*time.Second + D - 100*time.Millisecond)
	write("ci-w-02",
		election.Event{Kind: election.EventObservedLeader, Time: t0.Add(time.Second), Term: 1, Leader: "ci-w-01"},
		election.Event{Kind: election.EventStartedLeading, Time: w2start, Term: 2, ValidUntil: w2start.Add(D)},
	)
	files, err := DownloadHistory(ctx, hc, []string{"ci-w-01", "ci-w-02"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("downloaded %v, want one blob per worker", files)
	}
	for _, f := range files {
		if !regexp.MustCompile(`ci-w-0[12]/\d+-\d{4}\.jsonl$`).MatchString(filepath.ToSlash(f)) {
			t.Errorf("file %s does not keep the <identity>/<start-ns>-<n>.jsonl name", f)
		}
	}
	events, err := checker.ReadHistory(files...)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("read %d events back, want 4", len(events))
	}
	run := checker.Run{Events: events, Start: t0, End: w2start.Add(5 * time.Second)}
	p := checker.DefaultParams()
	strict, err := checker.Check(run, p)
	if err != nil {
		t.Fatal(err)
	}
	if !hasViolation(strict, checker.InvS1) {
		t.Fatalf("without skew tolerance the 100 ms overlap must be an S1 violation; got %v", strict.Violations)
	}
	p.ClockSkew = 250 * time.Millisecond
	tolerant, err := checker.Check(run, p)
	if err != nil {
		t.Fatal(err)
	}
	if hasViolation(tolerant, checker.InvS1) {
		t.Fatalf("with 250 ms skew tolerance the 100 ms overlap is not a violation; got %v", tolerant.Violations)
	}
}

func hasViolation(r checker.Result, inv string) bool {
	for _, v := range r.Violations {
		if v.Invariant == inv {
			return true
		}
	}
	return false
}

func TestOffline_ContendingMeansTrafficMovedDuringTheWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	for _, tc := range []struct {
		name          string
		before, after count
		want          bool
	}{
		{"moved", count{100, t0}, count{180, t0}, true},
		{"still", count{100, t0}, count{100, t0}, false},
		{"unknown before", count{-1, t0}, count{180, t0}, false},
		{"unknown after", count{100, t0}, count{-1, t0}, false},
		{"sidecar restarted and counted", count{900, t0}, count{40, t1}, true},
		{"sidecar restarted, nothing yet", count{900, t0}, count{0, t1}, false},
	} {
		if got := moved(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: moved(%v, %v) = %v, want %v", tc.name, tc.before, tc.after, got, tc.want)
		}
	}
}

// TestOffline_SuiteDeploysWhatUsersDeploy: the suite is the first time the
// deployment meets Azure, so it deploys what `make deploy` deploys, alerts
// included (the action group and the rules, whose queries must run against
// the real workspace), and groups Azure Container Instances accepts and
// bills as docs/deploy.md says: at least 1 vCPU and 1 GB per group.
func TestOffline_SuiteDeploysWhatUsersDeploy(t *testing.T) {
	env := Env{Location: "swedencentral", Workers: 3, AlertEmail: DefaultAlertEmail}
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, images := range []*Images{nil, {Worker: "cr.azurecr.io/blobleader/worker@" + d, Sidecar: "cr.azurecr.io/blobleader/chaos@" + d}} {
		vars, err := TerraformVars(env, "abc123", "11111111-1111-1111-1111-111111111111", images)
		if err != nil {
			t.Fatal(err)
		}
		alerts, _ := vars["alerts"].(map[string]any)
		if alerts["enabled"] == false || fmt.Sprint(alerts["email_receivers"]) != "["+DefaultAlertEmail+"]" {
			t.Errorf("stage with images=%v: alerts %v; the suite must deploy the alerts users get (on, e-mailing %s)", images != nil, vars["alerts"], DefaultAlertEmail)
		}
		if _, set := vars["log_route"]; set {
			t.Errorf("the suite sets log_route %v; it must deploy the default route users get", vars["log_route"])
		}
		cpu, mem := 1.0, 1.0 // infra/variables.tf's defaults, where the suite sets none
		if v, ok := vars["worker_cpu"].(float64); ok {
			cpu = v
		}
		if v, ok := vars["worker_memory_gb"].(float64); ok {
			mem = v
		}
		if cs := vars["chaos_sidecar"].(map[string]any); cs["enabled"] == true {
			scpu, _ := cs["cpu"].(float64)
			smem, _ := cs["memory_gb"].(float64)
			cpu, mem = cpu+scpu, mem+smem
		}
		if cpu < 0.999999 || mem < 0.999999 {
			t.Errorf("stage with images=%v: each group requests %.1f vCPU and %.1f GB (worker_cpu, worker_memory_gb, the sidecar's); Azure Container Instances allocates at least 1 and 1 to a group", images != nil, cpu, mem)
		}
	}
}

// TestOffline_LaterAppliesDoNotBlameAPullOnPropagation: the deploy stage
// retries a refused image pull while its new AcrPull assignment
// propagates; the shards stage's apply, long after, must report one at
// once instead of retrying it for 12 minutes (a new identity is still
// retried).
func TestOffline_LaterAppliesDoNotBlameAPullOnPropagation(t *testing.T) {
	first := TerraformOptions(Env{Terraform: "terraform"}, t.TempDir(), map[string]any{})
	later := LaterApply(first)
	pull := "Error: creating Container Group: InaccessibleImage: The image 'cr.azurecr.io/blobleader/worker@sha256:1' is not accessible"
	retried := func(o map[string]string, out string) bool {
		for re := range o {
			if regexp.MustCompile(re).MatchString(out) {
				return true
			}
		}
		return false
	}
	if !retried(first.RetryableTerraformErrors, pull) {
		t.Error("the deploy stage does not retry a refused pull while its AcrPull assignment propagates")
	}
	if retried(later.RetryableTerraformErrors, pull) {
		t.Error("a later apply retries a refused image pull as propagation")
	}
	if !retried(later.RetryableTerraformErrors, "Error: PrincipalNotFound: Principal 1 does not exist") {
		t.Error("a later apply no longer retries PrincipalNotFound")
	}
	if len(first.RetryableTerraformErrors) != 2 {
		t.Errorf("LaterApply changed the deploy stage's options: %v", first.RetryableTerraformErrors)
	}
}
