//go:build azure

package azure

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// layoutFiles lists the files of the single image in an OCI layout (the
// layout is plain JSON and gzipped tars): name → symlink target ("" for a
// regular file).
func layoutFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	blob := func(digest string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var index struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(index.Manifests))
	}
	var manifest struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, l := range manifest.Layers {
		zr, err := gzip.NewReader(strings.NewReader(string(blob(l.Digest))))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch h.Typeflag {
			case tar.TypeReg:
				files[h.Name] = ""
			case tar.TypeSymlink:
				files[h.Name] = "-> " + h.Linkname
			}
		}
	}
	return files
}

// The deploy stage builds both images as make image does: the worker with
// its one-word /status entry point (ACI exec), the sidecar without it. The
// image builder runs on this machine even though the binaries are for
// linux/amd64.
func TestOffline_SuiteBuildsBothImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two static binaries and two images (about a minute cold)")
	}
	ctx := ctxT(t, 10*time.Minute)
	out := t.TempDir()
	worker, side, err := BuildImages(ctx, repoRoot(t), out)
	if err != nil {
		t.Fatal(err)
	}
	wf, sf := layoutFiles(t, worker), layoutFiles(t, side)
	if wf["blobleader"] != "" || wf["status"] != "-> blobleader" {
		t.Fatalf("worker image files %v: want /blobleader and /status -> blobleader", wf)
	}
	if _, ok := sf["chaos-sidecar"]; !ok || sf["status"] != "" {
		t.Fatalf("sidecar image files %v: want /chaos-sidecar and no /status", sf)
	}
	if _, ok := sf["status"]; ok {
		t.Fatalf("the sidecar image has a /status link: %v", sf)
	}
}

// The push runs infra/image, a module of its own, from the suite (a `go run
// ./infra/image` from the repository root no longer resolves).
func TestOffline_SuitePushCommandResolves(t *testing.T) {
	cmd := pushCommand(ctxT(t, 5*time.Minute), repoRoot(t), "unused", "example.azurecr.io/x", "--help")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-repository") {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}
