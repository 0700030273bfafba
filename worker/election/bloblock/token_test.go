package bloblock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// unreachableIdentity never delivers a token: every call fails at once.
type unreachableIdentity struct{ calls int }

func (u *unreachableIdentity) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	u.calls++
	return azcore.AccessToken{}, errors.New("connection refused")
}

// stalledIdentity answers only when its caller gives up.
type stalledIdentity struct{}

func (stalledIdentity) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	<-ctx.Done()
	return azcore.AccessToken{}, ctx.Err()
}

func TestWarmUp_GivesUpAfterTheBudgetSayingWhy(t *testing.T) {
	cred := &unreachableIdentity{}
	var log bytes.Buffer
	took, err := WarmUp(context.Background(), cred, 2500*time.Millisecond, slog.New(slog.NewTextHandler(&log, nil)))
	if !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("WarmUp = %v, want ErrNoToken naming the last failure", err)
	}
	// 10 s tells giving up at the 2.5 s budget from not giving up: no stall
	// needed (docs/chaos.md#a-busy-machine).
	if took < 2500*time.Millisecond || took > 10*time.Second {
		t.Errorf("WarmUp gave up after %v, want the 2.5 s budget", took)
	}
	if cred.calls < 2 {
		t.Errorf("WarmUp asked %d times within 2.5 s, want it to retry", cred.calls)
	}
	if !strings.Contains(log.String(), "no storage token yet") {
		t.Errorf("no progress in the log:\n%s", log.String())
	}
}

func TestWarmUp_LogsProgressWhileOneRequestHangs(t *testing.T) {
	var log bytes.Buffer
	_, err := warmUp(context.Background(), stalledIdentity{}, 300*time.Millisecond, 50*time.Millisecond, slog.New(slog.NewTextHandler(&log, nil)))
	if !errors.Is(err, ErrNoToken) {
		t.Fatalf("warmUp = %v, want ErrNoToken", err)
	}
	if n := strings.Count(log.String(), "still waiting for the first storage token"); n < 2 {
		t.Errorf("%d progress lines during a 300 ms hang at 50 ms, want several:\n%s", n, log.String())
	}
}
