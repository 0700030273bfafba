//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// ARMEndpoint is Azure Resource Manager in the public cloud (its token
// audience too).
const ARMEndpoint = "https://management.azure.com"

// ARMReader lists what the typed SDK clients of this module do not cover:
// a namespace's feature registrations, a resource's diagnostic categories
// and settings, the alerts Azure Monitor fired. List follows nextLink and
// returns every item of `value`; Get returns one resource's JSON.
type ARMReader interface {
	Get(ctx context.Context, path, apiVersion string) ([]byte, error)
	List(ctx context.Context, path, apiVersion string, query url.Values) ([]json.RawMessage, error)
}

// ARMError is ARM's refusal: the status, its error code and message.
type ARMError struct {
	Status        int
	Code, Message string
}

func (e *ARMError) Error() string {
	return fmt.Sprintf("ARM answered %d %s: %s", e.Status, e.Code, e.Message)
}

// ARMClient is the ARMReader on azcore's pipeline (bearer token for ARM,
// retries, a transport tests replace).
type ARMClient struct {
	pl       runtime.Pipeline
	endpoint string
}

// NewARMClient returns a reader for the public cloud's ARM.
func NewARMClient(cred azcore.TokenCredential, opts *policy.ClientOptions) *ARMClient {
	return &ARMClient{pl: bearerPipeline(cred, ARMEndpoint, opts), endpoint: ARMEndpoint}
}

// maxPages bounds a listing (a feature list is one page; fired alerts of
// one run a few).
const maxPages = 50

func (c *ARMClient) Get(ctx context.Context, path, apiVersion string) ([]byte, error) {
	return c.get(ctx, c.endpoint+path+"?api-version="+url.QueryEscape(apiVersion))
}

func (c *ARMClient) List(ctx context.Context, path, apiVersion string, query url.Values) ([]json.RawMessage, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("api-version", apiVersion)
	next := c.endpoint + path + "?" + q.Encode()
	var out []json.RawMessage
	for page := 0; next != ""; page++ {
		if page == maxPages {
			return out, fmt.Errorf("ARM: %s has more than %d pages", path, maxPages)
		}
		b, err := c.get(ctx, next)
		if err != nil {
			return out, err
		}
		var p struct {
			Value    []json.RawMessage `json:"value"`
			NextLink string            `json:"nextLink"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return out, fmt.Errorf("ARM: %s: answer is not a list: %w", path, err)
		}
		out, next = append(out, p.Value...), p.NextLink
	}
	return out, nil
}

func (c *ARMClient) get(ctx context.Context, u string) ([]byte, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(b))
		}
		return nil, &ARMError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	return b, nil
}
