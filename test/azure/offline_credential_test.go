//go:build azure

package azure

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

func getter(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The forms Terraform's azurerm accepts from ARM_* are the forms the
// harness accepts, picked in azurerm's order; anything half configured is
// refused naming the missing variable.
func TestOffline_CredentialFormsLikeAzurerm(t *testing.T) {
	sp := func(kv ...string) map[string]string {
		m := map[string]string{"ARM_CLIENT_ID": "c", "ARM_TENANT_ID": "t"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		kind CredentialKind
		want string // in the error when not empty
	}{
		{"nothing: the Azure CLI", map[string]string{}, CredAzureCLI, ""},
		{"client secret", sp("ARM_CLIENT_SECRET", "s"), CredSecret, ""},
		{"client secret file", sp("ARM_CLIENT_SECRET_FILE_PATH", "/run/secret"), CredSecret, ""},
		{"certificate path wins over a secret", sp("ARM_CLIENT_CERTIFICATE_PATH", "/c.pfx", "ARM_CLIENT_SECRET", "s"), CredCertificate, ""},
		{"certificate inline", sp("ARM_CLIENT_CERTIFICATE", "MIIB"), CredCertificate, ""},
		{"OIDC token", sp("ARM_USE_OIDC", "true", "ARM_OIDC_TOKEN", "jwt"), CredOIDCToken, ""},
		{"OIDC token file", sp("ARM_USE_OIDC", "true", "ARM_OIDC_TOKEN_FILE_PATH", "/var/run/token"), CredOIDCToken, ""},
		{"GitHub Actions OIDC", sp("ARM_USE_OIDC", "true", "ACTIONS_ID_TOKEN_REQUEST_URL", "https://gh/x", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "r"), CredGitHubOIDC, ""},
		{"GitHub OIDC in ARM spelling", sp("ARM_USE_OIDC", "true", "ARM_OIDC_REQUEST_URL", "https://gh/x", "ARM_OIDC_REQUEST_TOKEN", "r"), CredGitHubOIDC, ""},
		{"managed identity", map[string]string{"ARM_USE_MSI": "true"}, CredManagedIdentity, ""},
		{"user-assigned managed identity", map[string]string{"ARM_USE_MSI": "true", "ARM_CLIENT_ID": "c"}, CredManagedIdentity, ""},
		{"Azure SDK variables", map[string]string{"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t", "AZURE_FEDERATED_TOKEN_FILE": "/f"}, CredAzureSDK, ""},
		{"no tenant", map[string]string{"ARM_CLIENT_ID": "c", "ARM_CLIENT_SECRET": "s"}, "", "ARM_TENANT_ID"},
		{"no client id", map[string]string{"ARM_TENANT_ID": "t", "ARM_CLIENT_SECRET": "s"}, "", "ARM_CLIENT_ID"},
		{"client id and nothing else", sp(), "", "ARM_CLIENT_SECRET"},
		{"OIDC without a token", sp("ARM_USE_OIDC", "true"), "", "ACTIONS_ID_TOKEN_REQUEST_URL"},
		{"GitHub URL without its token", sp("ARM_USE_OIDC", "true", "ACTIONS_ID_TOKEN_REQUEST_URL", "https://gh/x"), "", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"},
		{"token without ARM_USE_OIDC", sp("ARM_OIDC_TOKEN", "jwt"), "", "ARM_USE_OIDC=true"},
		{"Azure DevOps OIDC", sp("ARM_USE_OIDC", "true", "ARM_ADO_PIPELINE_SERVICE_CONNECTION_ID", "x"), "", "ARM_ADO_PIPELINE_SERVICE_CONNECTION_ID"},
		{"CLI turned off", map[string]string{"ARM_USE_CLI": "false"}, "", "ARM_USE_CLI=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanCredential(getter(tc.env))
			if tc.want != "" {
				if !errors.Is(err, ErrCredential) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrCredential naming %q", err, tc.want)
				}
				return
			}
			if err != nil || p.Kind != tc.kind {
				t.Fatalf("plan %q (%v), want %q", p.Kind, err, tc.kind)
			}
		})
	}
}

// CI with ARM OIDC (what azure/login and Terraform use in the workflow):
// the preflight accepts it without an az login, and names the missing
// variable when GitHub did not provide its token endpoint.
func TestOffline_PreflightAcceptsGitHubOIDC(t *testing.T) {
	env := map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_CLIENT_ID": "c", "ARM_TENANT_ID": "t", "ARM_USE_OIDC": "true",
		"ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.actions.example/x", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "r"}
	host := &fakeHost{env: env, path: map[string]bool{"go": true, "terraform": true}}
	e, err := LoadEnv(host.probe())
	if err != nil || e.Credential.Kind != CredGitHubOIDC || host.azCalled {
		t.Fatalf("LoadEnv: %v, credential %q, az consulted %v; want GitHub OIDC without az", err, e.Credential.Kind, host.azCalled)
	}
	delete(env, "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
	if _, err := LoadEnv(host.probe()); err == nil || !strings.Contains(err.Error(), "ACTIONS_ID_TOKEN_REQUEST_TOKEN") || !strings.HasPrefix(err.Error(), "test-azure: cannot run") {
		t.Fatalf("without the request token: %v, want the one preflight line naming ACTIONS_ID_TOKEN_REQUEST_TOKEN", err)
	}
}

// fakeEntra is a Microsoft Entra token endpoint for one tenant, over TLS;
// it records the token requests' forms.
type fakeEntra struct {
	srv   *httptest.Server
	mu    sync.Mutex
	forms []url.Values
}

func newFakeEntra(t *testing.T, tenant string) *fakeEntra {
	t.Helper()
	e := &fakeEntra{}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+tenant+"/v2.0/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		base := e.srv.URL + "/" + tenant
		json.NewEncoder(w).Encode(map[string]any{
			"token_endpoint": base + "/oauth2/v2.0/token", "authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer": base + "/v2.0", "device_authorization_endpoint": base + "/oauth2/v2.0/devicecode",
		})
	})
	mux.HandleFunc("/"+tenant+"/oauth2/v2.0/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		e.mu.Lock()
		e.forms = append(e.forms, r.PostForm)
		e.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600, "access_token": "entra-access-token"})
	})
	mux.HandleFunc("/github/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer gh-request-token" || r.URL.Query().Get("audience") != githubAudience {
			http.Error(w, "bad request token or audience", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"count":1,"value":"gh-id-token-%s"}`, r.URL.Query().Get("api-version"))
	})
	e.srv = httptest.NewTLSServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *fakeEntra) options() credOptions {
	return credOptions{
		client:           azcore.ClientOptions{Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: e.srv.URL + "/"}, Transport: e.srv.Client()},
		noInstanceLookup: true,
	}
}

func (e *fakeEntra) lastForm() url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.forms) == 0 {
		return nil
	}
	return e.forms[len(e.forms)-1]
}

func entraToken(t *testing.T, p CredentialPlan, o credOptions) {
	t.Helper()
	cred, err := newCredential(p, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{armScope}})
	if err != nil || tok.Token != "entra-access-token" {
		t.Fatalf("%s: token %q, %v", p.Kind, tok.Token, err)
	}
}

// Each form gets a token from Entra the way azurerm's does: the GitHub form
// fetches an ID token with Entra's federation audience and presents it as
// the client assertion; the certificate form signs an assertion; the secret
// form sends the secret.
func TestOffline_CredentialsGetTokensFromEntra(t *testing.T) {
	const tenant = "00000000-0000-0000-0000-0000000000aa"
	e := newFakeEntra(t, tenant)
	env := map[string]string{"ARM_CLIENT_ID": "ci-client", "ARM_TENANT_ID": tenant, "ARM_USE_OIDC": "true",
		"ACTIONS_ID_TOKEN_REQUEST_URL": e.srv.URL + "/github/token?api-version=2.0", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "gh-request-token"}
	p, err := PlanCredential(getter(env))
	if err != nil {
		t.Fatal(err)
	}
	entraToken(t, p, e.options())
	f := e.lastForm()
	if f.Get("client_assertion") != "gh-id-token-2.0" || f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || f.Get("client_id") != "ci-client" {
		t.Fatalf("GitHub OIDC token request %v: want GitHub's ID token as the client assertion", f)
	}

	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	os.WriteFile(tokFile, []byte("file-jwt\n"), 0o600)
	p, _ = PlanCredential(getter(map[string]string{"ARM_CLIENT_ID": "ci-client", "ARM_TENANT_ID": tenant, "ARM_USE_OIDC": "1", "ARM_OIDC_TOKEN_FILE_PATH": tokFile}))
	entraToken(t, p, e.options())
	if a := e.lastForm().Get("client_assertion"); a != "file-jwt" {
		t.Fatalf("OIDC token file: assertion %q, want the file's token", a)
	}

	p, _ = PlanCredential(getter(map[string]string{"ARM_CLIENT_ID": "ci-client", "ARM_TENANT_ID": tenant, "ARM_CLIENT_SECRET": "s3cret"}))
	entraToken(t, p, e.options())
	if s := e.lastForm().Get("client_secret"); s != "s3cret" {
		t.Fatalf("client secret form: %v", e.lastForm())
	}

	certPath := filepath.Join(dir, "sp.pem")
	writeSelfSignedPEM(t, certPath)
	p, _ = PlanCredential(getter(map[string]string{"ARM_CLIENT_ID": "ci-client", "ARM_TENANT_ID": tenant, "ARM_CLIENT_CERTIFICATE_PATH": certPath}))
	entraToken(t, p, e.options())
	if f := e.lastForm(); strings.Count(f.Get("client_assertion"), ".") != 2 || f.Get("client_secret") != "" {
		t.Fatalf("certificate form: %v, want a signed JWT assertion", f)
	}
	p.CertPath = filepath.Join(dir, "missing.pem")
	if _, err := newCredential(p, e.options()); err == nil || !strings.Contains(err.Error(), "ARM_CLIENT_CERTIFICATE_PATH") {
		t.Fatalf("missing certificate file: %v, want an error naming ARM_CLIENT_CERTIFICATE_PATH", err)
	}
}

func writeSelfSignedPEM(t *testing.T, path string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ci"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	b := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
