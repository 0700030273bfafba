package bloblock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// ObserveFunc receives one storage HTTP request: the operation name (see
// WithOp), the outcome code (HTTP status, or "timeout"/"error" when no
// response came back) and how long it took.
type ObserveFunc func(op, code string, took time.Duration)

// ClientConfig says how to reach the container that holds the lock blob.
// Exactly one of ConnectionString and AccountURL must be set.
type ClientConfig struct {
	// ConnectionString, e.g. Azurite's; uses the account key in it.
	ConnectionString string
	// AccountURL, e.g. https://acct.blob.core.windows.net; authenticates with
	// Credential, or NewCredential's when nil. Share one Credential between
	// clients and WarmUp it before the first request: a token fetch runs
	// inside each request's RequestTimeout.
	AccountURL string
	Credential azcore.TokenCredential
	// Container name.
	Container string
	// RequestTimeout bounds each HTTP try; callers also pass context deadlines.
	RequestTimeout time.Duration
	// Observe, if set, sees every request (for metrics).
	Observe ObserveFunc
	// Transport, if set, replaces the HTTP client (tests, proxies).
	Transport policy.Transporter
}

// ErrBadConnectionString is matched by every *ConnectionStringError.
var ErrBadConnectionString = errors.New("bloblock: malformed connection string")

// ConnectionStringError says what is wrong with a connection string. It
// matches ErrBadConnectionString. Problem never quotes an account key or a
// signature.
type ConnectionStringError struct {
	Problem string // e.g. `"x" is not key=value`
}

func (e *ConnectionStringError) Error() string {
	return ErrBadConnectionString.Error() + ": " + e.Problem
}

// Is makes errors.Is(err, ErrBadConnectionString) true.
func (e *ConnectionStringError) Is(target error) bool { return target == ErrBadConnectionString }

func badConnectionString(format string, args ...any) error {
	return &ConnectionStringError{Problem: fmt.Sprintf(format, args...)}
}

// NewContainerClient builds a container client configured for the election:
// SDK retries are off, because the election loop is the retry and must keep
// its own deadlines (a retrying SDK call could outlive the renew deadline);
// every try is bounded by RequestTimeout.
func NewContainerClient(cfg ClientConfig) (*container.Client, error) {
	if (cfg.ConnectionString == "") == (cfg.AccountURL == "") {
		return nil, errors.New("bloblock: set exactly one of a connection string and an account URL")
	}
	if cfg.Container == "" {
		return nil, errors.New("bloblock: container name is empty")
	}
	opts := &container.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: -1, TryTimeout: cfg.RequestTimeout}
	opts.Telemetry = policy.TelemetryOptions{ApplicationID: "blobleader"}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, redactPolicy{})
	if cfg.Observe != nil {
		opts.PerRetryPolicies = append(opts.PerRetryPolicies, observePolicy{cfg.Observe})
	}
	if cfg.Transport != nil {
		opts.Transport = cfg.Transport
	}
	if cfg.ConnectionString != "" {
		cs, err := ExpandConnectionString(cfg.ConnectionString)
		if err != nil {
			return nil, err
		}
		if err := checkConnectionString(cs); err != nil {
			return nil, err
		}
		c, err := container.NewClientFromConnectionString(cs, cfg.Container, opts)
		if err != nil {
			return nil, badConnectionString("%v", err)
		}
		return c, nil
	}
	cred := cfg.Credential
	if cred == nil {
		var err error
		if cred, err = NewCredential(); err != nil {
			return nil, err
		}
	}
	u := strings.TrimSuffix(cfg.AccountURL, "/") + "/" + cfg.Container
	return container.NewClient(u, cred, opts)
}

// The development storage account: the emulator's well-known, public
// account name and key (documented by Microsoft; not a secret) and its
// default blob endpoint.
const (
	developmentAccount      = "devstoreaccount1"
	developmentAccountKey   = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	developmentBlobEndpoint = "http://127.0.0.1:10000"
)

// ExpandConnectionString turns the emulator shortcut that .NET samples and
// app.config files use, "UseDevelopmentStorage=true" (optionally with
// "DevelopmentStorageProxyUri=http://host"), into a full connection string
// for the development account on Azurite's default blob port 10000. Any
// other connection string is returned unchanged.
func ExpandConnectionString(s string) (string, error) {
	var dev bool
	proxy := ""
	for _, part := range strings.Split(strings.TrimSuffix(strings.TrimSpace(s), ";"), ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "usedevelopmentstorage":
			if !strings.EqualFold(strings.TrimSpace(v), "true") {
				return "", badConnectionString("UseDevelopmentStorage must be true, got %q", v)
			}
			dev = true
		case "developmentstorageproxyuri":
			proxy = strings.TrimSpace(v)
		}
	}
	if !dev {
		return s, nil
	}
	endpoint := developmentBlobEndpoint
	if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil || u.Scheme == "" || u.Hostname() == "" {
			return "", badConnectionString("DevelopmentStorageProxyUri %q is not an absolute URI", proxy)
		}
		endpoint = u.Scheme + "://" + u.Hostname() + ":10000"
	}
	return "DefaultEndpointsProtocol=http;AccountName=" + developmentAccount + ";AccountKey=" + developmentAccountKey +
		";BlobEndpoint=" + endpoint + "/" + developmentAccount + ";", nil
}

// checkConnectionString rejects what the SDK would accept silently or fail on
// late: it must be key=value pairs with an AccountName (or a SAS/endpoint),
// and a BlobEndpoint must be an absolute http(s) URL (without a scheme the
// SDK builds request URLs that fail at every request, not at start).
func checkConnectionString(s string) error {
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimSuffix(s, ";"), ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return badConnectionString("%q is not key=value", part)
		}
		fields[strings.ToLower(k)] = v
	}
	_, named := fields["accountname"]
	endpoint, addressed := fields["blobendpoint"]
	if !named && !addressed {
		return badConnectionString("needs AccountName or BlobEndpoint")
	}
	if addressed {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return badConnectionString("BlobEndpoint %q must be an absolute URL, http://host[:port][/account] or https://…", withoutQuery(endpoint))
		}
	}
	return nil
}

// withoutQuery is an address as it may be shown: its query, which can
// carry a SAS signature, elided.
func withoutQuery(address string) string {
	if before, _, found := strings.Cut(address, "?"); found {
		return before + "?…"
	}
	return address
}

type observePolicy struct{ observe ObserveFunc }

func (p observePolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	op := storage.Op(ctx)
	start := time.Now()
	resp, err := req.Next()
	code := "error"
	switch {
	case err == nil:
		code = strconv.Itoa(resp.StatusCode)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		code = "timeout"
	}
	p.observe(op, code, time.Since(start))
	return resp, err
}

// redactPolicy is the one place a storage request's error is made safe to
// print: net/http's *url.Error quotes the whole request URL, and with a SAS
// connection string its query carries the signature. Every client of
// NewContainerClient (election, ledger, shards, history, the subcommands)
// has it, so no error from storage carries a secret
// (docs/architecture.md#secrets).
type redactPolicy struct{}

func (redactPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactURL(ue.URL)
	}
	return resp, err
}

// redactURL replaces the value of a SAS signature (sig) in u's query.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a storage URL)"
	}
	q := p.Query()
	if !q.Has("sig") {
		return u
	}
	q.Set("sig", "REDACTED")
	p.RawQuery = q.Encode()
	return p.String()
}
