//go:build azure

package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// armScope is the token audience for ARM and for the ACR token exchange.
const armScope = "https://management.azure.com/.default"

// RegistryToken does in Go what `az acr login --expose-token` does for
// deploy.sh: it exchanges an Entra access token for an ACR refresh token,
// which infra/image push uses as the password of the zero-GUID user. base is
// the registry's base URL (https://<login server>).
func RegistryToken(ctx context.Context, hc *http.Client, cred azcore.TokenCredential, base string) (string, error) {
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{armScope}})
	if err != nil {
		return "", fmt.Errorf("azure: token for the registry exchange: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("azure: registry URL %q", base)
	}
	form := url.Values{
		"grant_type":   {"access_token"},
		"service":      {u.Hostname()},
		"access_token": {tok.Token},
	}
	if tid := claim(tok.Token, "tid"); tid != "" {
		form.Set("tenant", tid)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/oauth2/exchange", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("azure: registry token exchange: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("azure: registry token exchange at %s: %s: %s", u.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.RefreshToken == "" {
		return "", fmt.Errorf("azure: registry token exchange at %s: no refresh_token in the answer", u.Host)
	}
	return out.RefreshToken, nil
}

// claim reads one string claim from a JWT's payload without verifying it
// (it is our own token, used only to learn our tenant and object id).
func claim(jwt, name string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

// ObjectID is the Entra object id of whoever cred signs in as (the token's
// oid claim): the harness grants itself data roles with it.
func ObjectID(ctx context.Context, cred azcore.TokenCredential) (string, error) {
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{armScope}})
	if err != nil {
		return "", fmt.Errorf("azure: token: %w", err)
	}
	if oid := claim(tok.Token, "oid"); oid != "" {
		return oid, nil
	}
	return "", fmt.Errorf("azure: the ARM token carries no oid claim; set %s", EnvOperator)
}
