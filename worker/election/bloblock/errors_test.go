package bloblock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// A failed call says what storage answered — op, status, code and the
// service's message — or, with no answer, why, and never the request URL
// (whose query can carry a SAS signature).
func TestError_SaysWhatStorageAnsweredWithoutTheURL(t *testing.T) {
	strict := azuritetest.StartWithT(t, azuritetest.Options{CheckAPIVersion: true})
	port, err := azuritetest.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	const secret = "c2VjcmV0LXNpZ25hdHVyZQ"
	sas := fmt.Sprintf("BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;SharedAccessSignature=sv=2022-11-02&sp=rwdl&sig=%s", port, secret)
	for _, tt := range []struct {
		name          string
		conn          string
		status        int
		code, message string
	}{
		{"API version refused", strict.ConnectionString(), 400, "InvalidHeaderValue", "API version"},
		{"nothing listening", sas, 0, "error", "connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: tt.conn, Container: "answers", RequestTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			lock, err := bloblock.New(c, "leader")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = lock.Acquire(ctx, uuid.NewString(), 15*time.Second)
			var se lease.StorageError
			if !errors.As(err, &se) {
				t.Fatalf("Acquire = %v (%T), want an lease.StorageError", err, err)
			}
			op, status, code, message := se.StorageAnswer()
			if op != "acquire" || status != tt.status || code != tt.code || !strings.Contains(message, tt.message) {
				t.Fatalf("StorageAnswer() = %q %d %q %q, want acquire %d %q and a message with %q", op, status, code, message, tt.status, tt.code, tt.message)
			}
			for _, s := range []string{message, err.Error()} {
				if strings.Contains(s, secret) || strings.Contains(s, "http://") {
					t.Fatalf("%q carries the request URL or its signature", s)
				}
			}
		})
	}
}
