// Package consumer checks the product's module boundary the way a user meets
// it: a scratch module that imports the library (with a replace to this
// checkout) must not inherit the harness's dependencies through minimal
// version selection.
package consumer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// harnessOnly are module path prefixes that belong to the test harness
// (terratest, toxiproxy, the image builder, the ARM fault injectors) and must
// never reach a library consumer.
var harnessOnly = []string{
	"github.com/gruntwork-io/terratest",
	"github.com/Shopify/toxiproxy",
	"github.com/aws/aws-sdk-go",
	"k8s.io/",
	"sigs.k8s.io/",
	"github.com/google/go-containerregistry",
	"github.com/rs/zerolog",
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/",
	// The lock service speaks gRPC on net/http's own HTTP/2 with generated
	// messages (google.golang.org/protobuf only); grpc-go is the harness's
	// client (test/daprsdk).
	"google.golang.org/grpc",
}

// azureStorageSDK are the modules allowed to bring a harness-only module
// along: azblob v1.8.1's own go.mod requires armstorage (for its tests),
// and arrow-go, which azblob requires, requires grpc. No package of either
// is compiled into a consumer; the test checks that too. The library's own
// go.mod never may.
var azureStorageSDK = []string{
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob@",
	"github.com/apache/arrow-go/v18@",
}

const consumerMain = `package main

import (
	"context"
	"fmt"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

func main() {
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: "UseDevelopmentStorage=true", Container: "leases"})
	if err != nil {
		panic(err)
	}
	lock, err := bloblock.New(c, "leader")
	if err != nil {
		panic(err)
	}
	_, err = election.NewElector(election.DefaultConfig("consumer"), lock, election.Callbacks{})
	fmt.Println(err, context.Background())
}
`

func TestConsumerModule_InheritsNoHarnessDependencies(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "worker", "election", "elector.go")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26.0\n\nrequire github.com/blobleader/blobleader v0.0.0\n\nreplace github.com/blobleader/blobleader => " + root + "\n"
	write(t, filepath.Join(dir, "go.mod"), gomod)
	write(t, filepath.Join(dir, "main.go"), consumerMain)

	goCmd(t, dir, "mod", "tidy")
	goCmd(t, dir, "build", "-o", filepath.Join(dir, "consumer"), ".")

	all := strings.Fields(goCmd(t, dir, "list", "-m", "-f", "{{.Path}}", "all"))
	t.Logf("a consumer of the library has %d modules in its graph (go list -m all)", len(all))
	graph := goCmd(t, dir, "mod", "graph")
	deps := goCmd(t, dir, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	for _, m := range all {
		if !harnessOnlyModule(m) {
			continue
		}
		// Allowed only when nothing but the Azure Storage SDK's go.mod (or
		// its arrow-go's) requires it and no package of it is compiled in.
		for _, edge := range strings.Split(graph, "\n") {
			from, to, ok := strings.Cut(edge, " ")
			if !ok || (to != m && !strings.HasPrefix(to, m+"@")) {
				continue
			}
			if !fromAzureStorageSDK(from) {
				t.Errorf("harness-only module %s reaches the consumer through %s", m, from)
			}
		}
		for _, d := range strings.Fields(deps) {
			if d == m {
				t.Errorf("harness-only module %s is compiled into the consumer", m)
			}
		}
		t.Logf("note: %s is in the graph only because azblob's go.mod (or arrow-go's, which azblob requires) requires it; no package of it is built", m)
	}
}

func fromAzureStorageSDK(from string) bool {
	for _, p := range azureStorageSDK {
		if strings.HasPrefix(from, p) {
			return true
		}
	}
	return false
}

func harnessOnlyModule(m string) bool {
	for _, p := range harnessOnly {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir (module mode, the machine's proxy and
// cache settings) and fails the test with its output on error.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}
