//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// LogsEndpoint is the Log Analytics query API (its token audience too).
const LogsEndpoint = "https://api.loganalytics.io"

// LogTable is the primary result of a log query.
type LogTable struct {
	Columns []string
	Rows    [][]any
}

// Col is the index of the named column, -1 when absent.
func (t *LogTable) Col(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// QueryError is the query API's refusal: its code chain, innermost last
// (e.g. BadArgumentError, SemanticError, SEM0100), and message.
type QueryError struct {
	Status  int
	Codes   []string
	Message string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("log query refused (%d %s): %s", e.Status, strings.Join(e.Codes, "/"), e.Message)
}

// Has reports whether code is anywhere in the chain.
func (e *QueryError) Has(code string) bool {
	for _, c := range e.Codes {
		if c == code {
			return true
		}
	}
	return false
}

// LogsClient runs queries against one workspace through the Log Analytics
// query API (POST /v1/workspaces/{id}/query), on azcore's pipeline: bearer
// token for api.loganalytics.io, retries, a transport tests replace.
type LogsClient struct {
	pl       runtime.Pipeline
	endpoint string
}

// NewLogsClient returns a client for the public cloud's query API.
func NewLogsClient(cred azcore.TokenCredential, opts *policy.ClientOptions) *LogsClient {
	return &LogsClient{pl: bearerPipeline(cred, LogsEndpoint, opts), endpoint: LogsEndpoint}
}

// bearerPipeline is azcore's pipeline with a bearer token for audience
// (the service's endpoint) on every try.
func bearerPipeline(cred azcore.TokenCredential, audience string, opts *policy.ClientOptions) runtime.Pipeline {
	if opts == nil {
		opts = &policy.ClientOptions{}
	}
	auth := runtime.NewBearerTokenPolicy(cred, []string{audience + "/.default"}, nil)
	return runtime.NewPipeline("blobleader-verify", "v1", runtime.PipelineOptions{PerRetry: []policy.Policy{auth}}, opts)
}

// Query runs query over timespan (ISO 8601, e.g. PT1H) in workspace (its
// GUID) and returns the primary table.
func (c *LogsClient) Query(ctx context.Context, workspace, query, timespan string) (*LogTable, error) {
	req, err := runtime.NewRequest(ctx, http.MethodPost, c.endpoint+"/v1/workspaces/"+workspace+"/query")
	if err != nil {
		return nil, err
	}
	body := map[string]string{"query": query}
	if timespan != "" {
		body["timespan"] = timespan
	}
	if err := runtime.MarshalAsJSON(req, body); err != nil {
		return nil, err
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, queryError(resp.StatusCode, b)
	}
	var out struct {
		Tables []struct {
			Columns []struct{ Name string } `json:"columns"`
			Rows    [][]any                 `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("log query: answer is not JSON: %w", err)
	}
	if len(out.Tables) == 0 {
		return nil, errors.New("log query: answer has no table")
	}
	t := &LogTable{Rows: out.Tables[0].Rows}
	for _, c := range out.Tables[0].Columns {
		t.Columns = append(t.Columns, c.Name)
	}
	return t, nil
}

// queryError reads the API's nested error ({"error":{"code","message",
// "innererror":{…}}}), keeping every code and the innermost message.
func queryError(status int, b []byte) error {
	type inner struct {
		Code       string          `json:"code"`
		Message    string          `json:"message"`
		InnerError json.RawMessage `json:"innererror"`
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	e := &QueryError{Status: status}
	if json.Unmarshal(b, &env) != nil || env.Error == nil {
		e.Message = strings.TrimSpace(string(b))
		return e
	}
	raw := env.Error
	for len(raw) > 0 && string(raw) != "null" {
		var in inner
		if json.Unmarshal(raw, &in) != nil {
			break
		}
		if in.Code != "" {
			e.Codes = append(e.Codes, in.Code)
		}
		if in.Message != "" {
			e.Message = in.Message
		}
		raw = in.InnerError
	}
	return e
}
