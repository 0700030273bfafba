package consumer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Go snippets compile as a user pastes them: "Using the
// library" is a whole program; "From Go" (worker/mutex) is a function body
// over ctx and a warmed-up cred. Only the functions the snippets call for
// the user's own work (doWork, charge) are stubbed.
func TestReadme_GoSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := goBlockAfter(t, string(readme), "## Using the library")
	body := goBlockAfter(t, string(readme), "**From Go**")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/readme\n\ngo 1.26.0\n\nrequire github.com/blobleader/blobleader v0.0.0\n\nreplace github.com/blobleader/blobleader => "+root+"\n")
	write(t, filepath.Join(dir, "main.go"), program+"\nfunc doWork(context.Context, int64) error { return nil }\n")
	write(t, filepath.Join(dir, "mutex.go"), `package main

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

var _ = readmeMutex

func readmeMutex(ctx context.Context, cred azcore.TokenCredential) error {
`+body+`}

func charge(context.Context, string, int64) error { return nil }
`)
	goCmd(t, dir, "mod", "tidy")
	goCmd(t, dir, "vet", ".")
}

// goBlockAfter is the first ```go block after the line that starts with heading.
func goBlockAfter(t *testing.T, md, heading string) string {
	t.Helper()
	i := strings.Index(md, "\n"+heading)
	if i < 0 {
		t.Fatalf("README has no %q", heading)
	}
	_, block, ok := strings.Cut(md[i:], "\n```go\n")
	block, _, closed := strings.Cut(block, "\n```\n")
	if !ok || !closed {
		t.Fatalf("README has no Go block after %q", heading)
	}
	return block + "\n"
}
