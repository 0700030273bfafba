package cluster

import (
	"sync"
	"testing"
)

var lockClient struct {
	once sync.Once
	bin  string
	err  error
}

// LockClientBinary returns the lock scenarios' client (test/cmd/lockclient),
// built once per test binary (removed by Main).
func LockClientBinary(tb testing.TB) string {
	tb.Helper()
	lockClient.once.Do(func() {
		lockClient.bin, lockClient.err = buildPackage(harnessModule, "./cmd/lockclient", "lockclient")
	})
	if lockClient.err != nil {
		tb.Fatalf("lock client binary: %v", lockClient.err)
	}
	return lockClient.bin
}
