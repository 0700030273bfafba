package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/internal/faultinject"
)

// The ledger's storage faults come from faultinject: a transport between the
// SDK and Azurite that spoils one chosen request (the Nth of one operation)
// the way a network does, and passes every other one to real storage.

type faultMode = faultinject.Mode

const (
	failBeforeSend = faultinject.FailBeforeSend
	loseResponse   = faultinject.LoseResponse
	deliverLate    = faultinject.DeliverLate
)

// newFaultyContainer is newContainer with the injector on every request.
func newFaultyContainer(t *testing.T) (*container.Client, *faultinject.Injector) {
	t.Helper()
	f := faultinject.New()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(),
		Container:        fmt.Sprintf("f%d-%d", time.Now().UnixNano()%1e9, seq.Add(1)),
		RequestTimeout:   5 * time.Second,
		Transport:        f,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}
