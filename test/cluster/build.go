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

// UnsafeWorkerBinEnv names a prebuilt negative-control binary (built with
// -tags negativecontrol) to use instead of building one.
const UnsafeWorkerBinEnv = "BLOBLEADER_UNSAFE_WORKER_BIN"

// NegativeControlTag is the build tag that compiles the unsafe behaviour
// (--unsafe-no-step-down) into the worker; the production binary refuses the
// flag.
const NegativeControlTag = "negativecontrol"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error

	unsafeOnce sync.Once
	unsafeBin  string
	unsafeErr  error
}

// WorkerBinary returns the worker binary: $BLOBLEADER_WORKER_BIN, or
// `go build ./worker/cmd/blobleader` (in the root module, so the binary has the
// dependency versions a user gets) into a temp dir, once per test binary. Call Main from
// TestMain to remove that dir at the end.
func WorkerBinary(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		if p := os.Getenv(WorkerBinEnv); p != "" {
			build.bin, build.err = filepath.Abs(p)
			return
		}
		build.bin, build.err = buildPackage(rootModule, "./worker/cmd/blobleader", "blobleader")
	})
	if build.err != nil {
		tb.Fatalf("worker binary: %v", build.err)
	}
	return build.bin
}

// UnsafeWorkerBinary returns the negative-control worker: $BLOBLEADER_UNSAFE_WORKER_BIN,
// or `go build -tags negativecontrol ./worker/cmd/blobleader`, once per test
// binary. Only this binary accepts --unsafe-no-step-down.
func UnsafeWorkerBinary(tb testing.TB) string {
	tb.Helper()
	build.unsafeOnce.Do(func() {
		if p := os.Getenv(UnsafeWorkerBinEnv); p != "" {
			build.unsafeBin, build.unsafeErr = filepath.Abs(p)
			return
		}
		build.unsafeBin, build.unsafeErr = buildPackage(rootModule, "./worker/cmd/blobleader", "blobleader-negativecontrol", NegativeControlTag)
	})
	if build.unsafeErr != nil {
		tb.Fatalf("negative-control worker binary: %v", build.unsafeErr)
	}
	return build.unsafeBin
}

// buildMu guards build.dir: the plain and the tagged binary may be built at once.
var buildMu sync.Mutex

// The modules buildPackage builds in: the product (the repository root) and
// this harness module.
const (
	rootModule    = "github.com/blobleader/blobleader"
	harnessModule = "github.com/blobleader/blobleader/test"
)

// buildPackage builds a package of the given module (pkg is a path relative
// to that module's root) into the shared build dir, with the given build tags.
func buildPackage(module, pkg, name string, tags ...string) (string, error) {
	root, err := moduleDir(module)
	if err != nil {
		return "", err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if build.dir == "" {
		if build.dir, err = os.MkdirTemp("", "blobleader-cluster-"); err != nil {
			return "", err
		}
	}
	out := filepath.Join(build.dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(append(args, pkg), " "), err, stderr.String())
	}
	return out, nil
}

// moduleDir is the directory of a module in this build: the harness module
// itself, or the root module it replaces with ../ (go list resolves both).
func moduleDir(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("cluster: not inside the blobleader harness module")
	}
	return dir, nil
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
