package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// WorkerBinEnv names a prebuilt worker binary to use instead of building one
// (`make chaos` builds once into bin/ and sets it).
const WorkerBinEnv = "BLOBLEADER_WORKER_BIN"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// WorkerBinary returns the worker binary: $BLOBLEADER_WORKER_BIN, or
// `go build ./worker` into a temp dir, once per test binary. Call Main from
// TestMain to remove that dir at the end.
func WorkerBinary(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		if p := os.Getenv(WorkerBinEnv); p != "" {
			build.bin, build.err = filepath.Abs(p)
			return
		}
		build.bin, build.err = buildPackage("./worker", "worker")
	})
	if build.err != nil {
		tb.Fatalf("worker binary: %v", build.err)
	}
	return build.bin
}

// buildPackage builds a package of this module (a path relative to the
// module root) into the shared build dir.
func buildPackage(pkg, name string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if build.dir == "" {
		if build.dir, err = os.MkdirTemp("", "blobleader-cluster-"); err != nil {
			return "", err
		}
	}
	out := filepath.Join(build.dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	return out, nil
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("cluster: not inside the blobleader module")
	}
	return filepath.Dir(mod), nil
}

// Main runs the tests and removes the binaries built for them:
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	return code
}
