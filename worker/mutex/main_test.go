package mutex_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

// These tests run against a real Azurite that TestMain starts and stops;
// each test uses its own container.

var server *azuritetest.Server

func TestMain(m *testing.M) { azuritetest.RunMain(m, &server) }

var containerSeq atomic.Int64

// newContainer returns a client on a fresh container name; transport, when
// not nil, carries every request.
func newContainer(t *testing.T, transport policy.Transporter) *container.Client {
	t.Helper()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(),
		Container:        fmt.Sprintf("m%d-%d", time.Now().UnixNano()%1e9, containerSeq.Add(1)),
		RequestTimeout:   2 * time.Second, Transport: transport,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newLocker(t *testing.T, c *container.Client, owner string) *mutex.Locker {
	t.Helper()
	l, err := mutex.New(c, mutex.DefaultConfig(owner))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
