package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/ledger"
)

// --storage-dial (and its env twin) must be host:port; anything else is an
// invalid configuration naming the flag.
func TestWorker_StorageDialInvalidExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flag without port", nil, []string{"--connection-string", goodConn, "--storage-dial", "127.0.0.1"}},
		{"env with port 0", []string{"BLOBLEADER_STORAGE_DIAL=127.0.0.1:0"}, []string{"--connection-string", goodConn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runWorkerCmd(t, tc.env, tc.args...)
			if code != 2 || !strings.Contains(out, "--storage-dial") {
				t.Fatalf("exit %d, want 2 naming --storage-dial; output:\n%s", code, out)
			}
		})
	}
}

// With --storage-dial every storage connection goes to the given address:
// the connection string names a host that does not resolve, and the calls
// still reach Azurite. Without the flag the same client fails.
func TestWorker_StorageDialReachesStorageThroughTheAddress(t *testing.T) {
	az := azuritetest.StartT(t)
	// Production-style host (Azurite takes the account from the first label),
	// under .invalid so that it can never resolve.
	fake := azuritetest.Account + ".blob.core.windows.invalid"
	endpoint := fmt.Sprintf("http://%s:%d", fake, az.Port)
	conn := azuritetest.ConnectionString(endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	direct, err := newContainerClient(storageOptions{connectionString: conn, container: "dialtest"}, nil, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Create(ctx, nil); err == nil {
		t.Fatalf("a client without --storage-dial reached %s; the test proves nothing", fake)
	}

	var ops []string
	dialed, err := newContainerClient(storageOptions{connectionString: conn, container: "dialtest", storageDial: fmt.Sprintf("127.0.0.1:%d", az.Port)},
		nil, 5*time.Second, func(op, code string, _ time.Duration) { ops = append(ops, op+"="+code) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialed.Create(ctx, nil); err != nil {
		t.Fatalf("create container through --storage-dial: %v", err)
	}
	if _, err := dialed.GetProperties(ctx, nil); err != nil {
		t.Fatalf("get properties through --storage-dial: %v", err)
	}
	if len(ops) != 2 || !strings.HasSuffix(ops[0], "=201") || !strings.HasSuffix(ops[1], "=200") {
		t.Fatalf("observed requests %v, want a 201 and a 200", ops)
	}

	// The binary honours the flag too (the ledger subcommand shares it):
	// it reads back an entry written through the dialled client.
	w, err := ledger.Open(ctx, dialed, "leader", 1795400000000, "w1", ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx); err != nil {
		t.Fatal(err)
	}
	code, out := runWorkerCmd(t, nil, "ledger", "--verify", "--connection-string", conn, "--container", "dialtest",
		"--storage-dial", fmt.Sprintf("127.0.0.1:%d", az.Port), "--timeout", "10s")
	if code != 0 || !strings.Contains(out, "verified: 1 entry, 1 term") {
		t.Fatalf("worker ledger through --storage-dial: exit %d\n%s", code, out)
	}
}
