package bloblock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// storageScope is the audience of a blob data-plane token.
const storageScope = "https://storage.azure.com/.default"

// ErrNoToken is wrapped when no first storage token arrived within the budget.
var ErrNoToken = errors.New("bloblock: no storage token")

// NewCredential is the credential for an account URL: azidentity's
// DefaultAzureCredential, which honours AZURE_CLIENT_ID (a user-assigned
// identity) and AZURE_TOKEN_CREDENTIALS. A deployment should name its one
// credential there (infra/ sets ManagedIdentityCredential): the chain then
// holds only that credential and skips the metadata-endpoint probe, whose
// fixed 1 s timeout a slow endpoint fails.
func NewCredential() (azcore.TokenCredential, error) {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("bloblock: no Azure credential: %w", err)
	}
	return cred, nil
}

// WarmUp asks cred for a first storage token, patiently, and returns how long
// that took. Every storage request fetches its token inside its own short
// timeout (the election's per-request bound, 2 s by default), and a
// managed-identity endpoint can take longer than that to deliver its first
// token (ACI's is known to), in which case no request would ever get one.
// Asked once here, under budget, the token lands in cred's cache and later
// requests only refresh it, well before it expires. Each attempt gets the
// whole remaining budget; while one is pending, progress is logged every
// progressEvery (5 s).
func WarmUp(ctx context.Context, cred azcore.TokenCredential, budget time.Duration, log *slog.Logger) (time.Duration, error) {
	return warmUp(ctx, cred, budget, 5*time.Second, log)
}

func warmUp(ctx context.Context, cred azcore.TokenCredential, budget, progressEvery time.Duration, log *slog.Logger) (time.Duration, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	log.Info("waiting for the first storage token", "budget", budget.String())
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		err := tokenWithProgress(ctx, cred, start, progressEvery, log)
		if err == nil {
			took := time.Since(start)
			log.Info("first storage token acquired", "took", took.Round(time.Millisecond).String(), "attempts", attempt)
			return took, nil
		}
		log.Warn("no storage token yet", "attempt", attempt, "waited", time.Since(start).Round(time.Millisecond).String(), "err", err)
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%w within %v (%d attempts; last: %v)", ErrNoToken, budget, attempt, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// tokenWithProgress is one GetToken, logging every progressEvery while it is
// pending (a slow endpoint answers after many seconds, and the log is the
// operator's only view of a container that is not yet contending).
func tokenWithProgress(ctx context.Context, cred azcore.TokenCredential, start time.Time, progressEvery time.Duration, log *slog.Logger) error {
	done := make(chan error, 1)
	go func() {
		_, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{storageScope}})
		done <- err
	}()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			log.Info("still waiting for the first storage token", "waited", time.Since(start).Round(time.Second).String())
		}
	}
}
