//go:build azure

package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// The harness authenticates as the same principal Terraform's azurerm
// provider does, from the same ARM_* variables, in the same order (azurerm
// 5.2, internal/provider/provider.go and go-azure-sdk's auth): a client
// certificate, a client secret, an OIDC token (ARM_USE_OIDC with
// ARM_OIDC_TOKEN or ARM_OIDC_TOKEN_FILE_PATH), GitHub Actions' OIDC token
// endpoint (ARM_USE_OIDC with ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN, or their
// ARM_OIDC_REQUEST_* spellings), a managed identity (ARM_USE_MSI), then the
// Azure CLI. The Azure SDK's own AZURE_* variables are honoured too
// (DefaultAzureCredential), though Terraform does not read them. A half
// configured form is refused at preflight, naming what is missing, instead
// of failing every harness call after Terraform succeeded.

// CredentialKind names a credential form.
type CredentialKind string

const (
	CredCertificate     CredentialKind = "client certificate"
	CredSecret          CredentialKind = "client secret"
	CredOIDCToken       CredentialKind = "OIDC token"
	CredGitHubOIDC      CredentialKind = "GitHub Actions OIDC"
	CredManagedIdentity CredentialKind = "managed identity"
	CredAzureSDK        CredentialKind = "Azure SDK environment (AZURE_*)"
	CredAzureCLI        CredentialKind = "Azure CLI"
)

// githubAudience is the audience Entra expects of a federated GitHub token
// (what azurerm and azure/login ask for).
const githubAudience = "api://AzureADTokenExchange"

// CredentialPlan is the credential form the environment selects, with what
// it needs. Files are read when the credential is built (and again for each
// token, for OIDC token files, which rotate).
type CredentialPlan struct {
	Kind         CredentialKind
	TenantID     string
	ClientID     string
	ClientIDFile string // ARM_CLIENT_ID_FILE_PATH
	Secret       string
	SecretFile   string // ARM_CLIENT_SECRET_FILE_PATH
	CertBase64   string // ARM_CLIENT_CERTIFICATE: base64 PKCS#12
	CertPath     string // ARM_CLIENT_CERTIFICATE_PATH: PEM or PKCS#12
	CertPassword string
	OIDCToken    string
	OIDCFile     string // ARM_OIDC_TOKEN_FILE_PATH
	RequestURL   string // GitHub's ID token endpoint
	RequestToken string
}

// ErrCredential is wrapped by an incomplete or unusable credential setup.
var ErrCredential = errors.New("azure: credentials")

func firstSet(get func(string) string, names ...string) (string, string) {
	for _, n := range names {
		if v := get(n); v != "" {
			return v, n
		}
	}
	return "", ""
}

func anySet(get func(string) string, names ...string) bool {
	v, _ := firstSet(get, names...)
	return v != ""
}

func truthy(v string) bool { b, _ := strconv.ParseBool(v); return b }

// PlanCredential picks the credential form from the environment (get reads
// one variable). The error names what is missing, for the preflight line.
// The forms are tried in azurerm's order: ARM_* service principal or
// federated credential, managed identity, the Azure SDK's AZURE_*
// variables, then the Azure CLI.
func PlanCredential(get func(string) string) (CredentialPlan, error) {
	p, e := readCredentialEnv(get)
	kind, missing := p.choose(e, get)
	if missing != "" {
		return p, fmt.Errorf("%w: %s", ErrCredential, missing)
	}
	p.Kind = kind
	return p, nil
}

// credentialEnv is what the environment asks for beyond the plan's fields:
// the ARM_USE_* switches and which spelling of GitHub's OIDC endpoint is set.
type credentialEnv struct {
	useOIDC, useMSI bool
	urlVar, tokVar  string // the variables RequestURL and RequestToken came from
}

func readCredentialEnv(get func(string) string) (CredentialPlan, credentialEnv) {
	p := CredentialPlan{
		TenantID: get("ARM_TENANT_ID"), ClientID: get("ARM_CLIENT_ID"), ClientIDFile: get("ARM_CLIENT_ID_FILE_PATH"),
		Secret: get("ARM_CLIENT_SECRET"), SecretFile: get("ARM_CLIENT_SECRET_FILE_PATH"),
		CertBase64: get("ARM_CLIENT_CERTIFICATE"), CertPath: get("ARM_CLIENT_CERTIFICATE_PATH"), CertPassword: get("ARM_CLIENT_CERTIFICATE_PASSWORD"),
		OIDCToken: get("ARM_OIDC_TOKEN"), OIDCFile: get("ARM_OIDC_TOKEN_FILE_PATH"),
	}
	var e credentialEnv
	p.RequestURL, e.urlVar = firstSet(get, "ARM_OIDC_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_URL")
	p.RequestToken, e.tokVar = firstSet(get, "ARM_OIDC_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
	e.useOIDC = truthy(get("ARM_USE_OIDC")) || truthy(get("ARM_USE_AKS_WORKLOAD_IDENTITY"))
	e.useMSI = truthy(get("ARM_USE_MSI"))
	return p, e
}

func (p CredentialPlan) hasClient() bool { return p.ClientID != "" || p.ClientIDFile != "" }
func (p CredentialPlan) hasCert() bool   { return p.CertBase64 != "" || p.CertPath != "" }
func (p CredentialPlan) hasSecret() bool { return p.Secret != "" || p.SecretFile != "" }
func (p CredentialPlan) hasToken() bool  { return p.OIDCToken != "" || p.OIDCFile != "" }

// choose returns the credential kind, or what is missing for the one the
// environment asks for.
func (p CredentialPlan) choose(e credentialEnv, get func(string) string) (kind CredentialKind, missing string) {
	switch {
	case anySet(get, "ARM_ADO_PIPELINE_SERVICE_CONNECTION_ID", "ARM_OIDC_AZURE_SERVICE_CONNECTION_ID"):
		return "", "ARM_ADO_PIPELINE_SERVICE_CONNECTION_ID is set, but the harness does not support Azure DevOps pipeline OIDC; use ARM_OIDC_TOKEN, a client secret or certificate, or az login"
	case p.hasClient() || p.hasCert() || p.hasSecret() || e.useOIDC || p.hasToken():
		return p.armKind(e)
	case e.useMSI:
		return CredManagedIdentity, ""
	case get("AZURE_CLIENT_ID") != "" && get("AZURE_TENANT_ID") != "" &&
		anySet(get, "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE"):
		return CredAzureSDK, ""
	}
	if v := get("ARM_USE_CLI"); v != "" && !truthy(v) {
		return "", "a credential: ARM_USE_CLI=false and no ARM_CLIENT_ID, ARM_USE_MSI or AZURE_* service principal is set"
	}
	return CredAzureCLI, ""
}

// armKind: a service principal or federated credential configured through
// ARM_* variables (or a user-assigned managed identity named by its client id).
func (p CredentialPlan) armKind(e credentialEnv) (CredentialKind, string) {
	switch {
	case !p.hasClient() && !e.useMSI:
		return "", "ARM_CLIENT_ID (a service principal or federated credential is configured through ARM_* variables without its client id)"
	case p.TenantID == "" && !(e.useMSI && !p.hasCert() && !p.hasSecret() && !e.useOIDC):
		return "", "ARM_TENANT_ID (needed with ARM_CLIENT_ID for a service principal or federated credential)"
	case p.hasCert():
		return CredCertificate, ""
	case p.hasSecret():
		return CredSecret, ""
	case e.useOIDC:
		return p.oidcKind(e)
	case p.hasToken():
		return "", "ARM_USE_OIDC=true (ARM_OIDC_TOKEN or ARM_OIDC_TOKEN_FILE_PATH is set, but Terraform's azurerm ignores it without ARM_USE_OIDC=true)"
	case e.useMSI:
		return CredManagedIdentity, ""
	}
	return "", "a credential for ARM_CLIENT_ID: ARM_CLIENT_SECRET, ARM_CLIENT_CERTIFICATE_PATH, or ARM_USE_OIDC=true with ARM_OIDC_TOKEN (or GitHub's OIDC token endpoint)"
}

// oidcKind: ARM_USE_OIDC=true, with a token or GitHub's token endpoint.
func (p CredentialPlan) oidcKind(e credentialEnv) (CredentialKind, string) {
	switch {
	case p.hasToken():
		return CredOIDCToken, ""
	case p.RequestURL != "" && p.RequestToken != "":
		return CredGitHubOIDC, ""
	case p.RequestURL != "":
		return "", "ACTIONS_ID_TOKEN_REQUEST_TOKEN (or ARM_OIDC_REQUEST_TOKEN) beside " + e.urlVar + " (GitHub sets both when the job has permissions: id-token: write)"
	case p.RequestToken != "":
		return "", "ACTIONS_ID_TOKEN_REQUEST_URL (or ARM_OIDC_REQUEST_URL) beside " + e.tokVar + " (GitHub sets both when the job has permissions: id-token: write)"
	}
	return "", "an OIDC token for ARM_USE_OIDC=true: ARM_OIDC_TOKEN, ARM_OIDC_TOKEN_FILE_PATH, or in GitHub Actions ACTIONS_ID_TOKEN_REQUEST_URL + ACTIONS_ID_TOKEN_REQUEST_TOKEN (set by GitHub when the job has permissions: id-token: write)"
}

// credOptions are test seams: the token endpoints' cloud and transport.
type credOptions struct {
	client           azcore.ClientOptions
	noInstanceLookup bool // skip Entra instance discovery (a fake authority)
}

// NewCredential builds the credential the plan describes.
func NewCredential(p CredentialPlan) (azcore.TokenCredential, error) {
	return newCredential(p, credOptions{})
}

func newCredential(p CredentialPlan, o credOptions) (azcore.TokenCredential, error) {
	clientID := p.ClientID
	if clientID == "" && p.ClientIDFile != "" {
		b, err := os.ReadFile(p.ClientIDFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ARM_CLIENT_ID_FILE_PATH: %v", ErrCredential, err)
		}
		clientID = strings.TrimSpace(string(b))
	}
	switch p.Kind {
	case CredCertificate:
		data, from := []byte(nil), "ARM_CLIENT_CERTIFICATE_PATH"
		var err error
		if p.CertBase64 != "" {
			from = "ARM_CLIENT_CERTIFICATE"
			data, err = base64.StdEncoding.DecodeString(p.CertBase64)
		} else {
			data, err = os.ReadFile(p.CertPath)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCredential, from, err)
		}
		var pw []byte
		if p.CertPassword != "" {
			pw = []byte(p.CertPassword)
		}
		certs, key, err := azidentity.ParseCertificates(data, pw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s (with ARM_CLIENT_CERTIFICATE_PASSWORD if encrypted): %v", ErrCredential, from, err)
		}
		return azidentity.NewClientCertificateCredential(p.TenantID, clientID, certs, key,
			&azidentity.ClientCertificateCredentialOptions{ClientOptions: o.client, DisableInstanceDiscovery: o.noInstanceLookup})
	case CredSecret:
		secret := p.Secret
		if secret == "" {
			b, err := os.ReadFile(p.SecretFile)
			if err != nil {
				return nil, fmt.Errorf("%w: ARM_CLIENT_SECRET_FILE_PATH: %v", ErrCredential, err)
			}
			secret = strings.TrimSpace(string(b))
		}
		return azidentity.NewClientSecretCredential(p.TenantID, clientID, secret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: o.client, DisableInstanceDiscovery: o.noInstanceLookup})
	case CredOIDCToken, CredGitHubOIDC:
		assertion := p.oidcAssertion(o.client.Transport)
		return azidentity.NewClientAssertionCredential(p.TenantID, clientID, assertion,
			&azidentity.ClientAssertionCredentialOptions{ClientOptions: o.client, DisableInstanceDiscovery: o.noInstanceLookup})
	case CredManagedIdentity:
		opts := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: o.client}
		if clientID != "" {
			opts.ID = azidentity.ClientID(clientID)
		}
		return azidentity.NewManagedIdentityCredential(opts)
	case CredAzureSDK:
		return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: o.client})
	case CredAzureCLI:
		return azidentity.NewAzureCLICredential(&azidentity.AzureCLICredentialOptions{TenantID: p.TenantID})
	}
	return nil, fmt.Errorf("%w: no credential form selected", ErrCredential)
}

// oidcAssertion returns the client assertion source: the fixed token, the
// token file (read each time: projected tokens rotate), or a fresh ID token
// from GitHub's endpoint for every request (they live minutes; a suite runs
// for more than an hour, which is why the harness cannot rely on the az
// login that azure/login made with one of them).
func (p CredentialPlan) oidcAssertion(transport policy.Transporter) func(context.Context) (string, error) {
	switch {
	case p.OIDCFile != "":
		return func(context.Context) (string, error) {
			b, err := os.ReadFile(p.OIDCFile)
			if err != nil {
				return "", fmt.Errorf("%w: ARM_OIDC_TOKEN_FILE_PATH: %v", ErrCredential, err)
			}
			return strings.TrimSpace(string(b)), nil
		}
	case p.OIDCToken != "":
		return func(context.Context) (string, error) { return p.OIDCToken, nil }
	}
	if transport == nil {
		transport = http.DefaultClient
	}
	return func(ctx context.Context) (string, error) {
		return githubIDToken(ctx, transport, p.RequestURL, p.RequestToken)
	}
}

// githubIDToken asks GitHub Actions' ID token endpoint for a token with
// Entra's federation audience.
func githubIDToken(ctx context.Context, do policy.Transporter, requestURL, requestToken string) (string, error) {
	u, err := url.Parse(requestURL)
	if err != nil {
		return "", fmt.Errorf("%w: ID token request URL: %v", ErrCredential, err)
	}
	q := u.Query()
	if q.Get("audience") == "" {
		q.Set("audience", githubAudience)
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+requestToken)
	req.Header.Set("Accept", "application/json")
	resp, err := do.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: GitHub ID token: %v", ErrCredential, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: GitHub ID token: %s: %s", ErrCredential, resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Value == "" {
		return "", fmt.Errorf("%w: GitHub ID token: no value in the answer", ErrCredential)
	}
	return out.Value, nil
}
