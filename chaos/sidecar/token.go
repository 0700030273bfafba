package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// storageScope is the audience of a blob data-plane token.
const storageScope = "https://storage.azure.com/.default"

// ErrToken is wrapped when no first token arrived within the budget.
var ErrToken = errors.New("chaos-sidecar: no storage token")

// AwaitToken asks cred for a first storage token and keeps asking, with
// backoff, until one arrives or timeout has passed; it returns how long that
// took. Each request gets the whole remaining budget.
//
// Why: the SDK fetches tokens inside a request's try, under the try's
// timeout. ACI's managed-identity endpoint is known to answer its first
// request slowly (seconds), so a first token that must arrive within one
// short try may never arrive. Asking once up front, patiently, fills the
// credential's cache; later refreshes happen well before expiry.
func AwaitToken(ctx context.Context, cred azcore.TokenCredential, timeout time.Duration, log *slog.Logger) (time.Duration, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		_, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{storageScope}})
		if err == nil {
			took := time.Since(start)
			log.Info("storage token acquired", "took", took.Round(time.Millisecond).String(), "attempts", attempt)
			return took, nil
		}
		log.Warn("no storage token yet; retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%w within %v (%d attempts; last: %v)", ErrToken, timeout, attempt, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
