package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const fixtureMarker = "blobleader-image-fixture: usage"

// fixtureSource is a stand-in worker: it answers --help like a CLI would.
const fixtureSource = `package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--help" {
		fmt.Println("` + fixtureMarker + `")
		return
	}
	os.Exit(3)
}
`

// buildGuard bounds a `go build`: a hang guard, not a budget. The build
// is -trimpath with CGO off, so none of it comes from the cache the other
// packages' tests filled; on a fresh clone beside CPU hogs (load 13 on 2
// cores) the worker's cold build took more than 4 minutes.
const buildGuard = 20 * time.Minute

// goBuild compiles a static linux/amd64 binary, stopped by guard if it
// hangs; dir is the working directory and target a package path or file
// list understood there. Its error says
// how the build ended (exit status, or the guard's deadline) and what it
// printed.
func goBuild(t *testing.T, guard time.Duration, dir, out string, target ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	args := append([]string{"build", "-trimpath", "-o", out}, target...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-buildvcs=false")
	began := time.Now()
	b, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("go %s: not done within %v (the hang guard); output: %q", strings.Join(args, " "), guard, strings.TrimSpace(string(b)))
	case err != nil:
		return fmt.Errorf("go %s: %v after %v; output: %s", strings.Join(args, " "), err, time.Since(began).Round(time.Second), strings.TrimSpace(string(b)))
	}
	return nil
}

// A build the hang guard stopped says so: a CI run once showed only
// "go build ./worker/cmd/blobleader failed: " for a build killed at its
// deadline.
func TestGoBuild_ABuildStoppedByTheGuardSaysSo(t *testing.T) {
	err := goBuild(t, time.Millisecond, t.TempDir(), filepath.Join(t.TempDir(), "out"), "./none")
	if err == nil || !strings.Contains(err.Error(), "hang guard") {
		t.Fatalf("goBuild under a 1ms guard: %v; want an error naming the guard", err)
	}
	t.Logf("%v", err)
}

// worker is the real blobleader binary for linux/amd64, built once per
// test binary and shared by the tests that put it in an image; TestMain
// removes it.
var worker struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if worker.dir != "" {
		_ = os.RemoveAll(worker.dir)
	}
	os.Exit(code)
}

func workerBinary(t *testing.T) string {
	t.Helper()
	worker.once.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			worker.err = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "worker", "cmd", "blobleader", "main.go")); err != nil {
			worker.err = errors.New("worker/cmd/blobleader/main.go is missing")
			return
		}
		if worker.dir, worker.err = os.MkdirTemp("", "blobleader-image-test-"); worker.err != nil {
			return
		}
		worker.bin = filepath.Join(worker.dir, "blobleader")
		worker.err = goBuild(t, buildGuard, root, worker.bin, "./worker/cmd/blobleader")
	})
	if worker.err != nil {
		t.Fatalf("the worker binary: %v", worker.err)
	}
	return worker.bin
}

func fixtureBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(fixtureSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fixture")
	if err := goBuild(t, buildGuard, dir, bin, "main.go"); err != nil {
		t.Fatalf("building the fixture program failed: %v", err)
	}
	return bin
}

// testCABundle writes a small PEM file so the tests do not depend on the
// machine's bundle (the build does; see TestBuild_DefaultCABundle).
func testCABundle(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	pem := "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(p, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// buildAndReopen builds an image into a fresh layout and reads it back from
// disk, so every assertion is about what the layout holds.
func buildAndReopen(t *testing.T, o buildOptions) (v1.Image, v1.Descriptor, string) {
	t.Helper()
	img, err := buildImage(o)
	if err != nil {
		t.Fatalf("buildImage: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	d, err := writeLayout(dir, img, "blobleader/worker")
	if err != nil {
		t.Fatalf("writeLayout: %v", err)
	}
	got, desc, err := readLayoutImage(dir)
	if err != nil {
		t.Fatalf("readLayoutImage: %v", err)
	}
	if desc.Digest != d {
		t.Fatalf("layout index points at %s, build returned %s", desc.Digest, d)
	}
	return got, desc, dir
}

type fileInfo struct {
	hdr  *tar.Header
	data []byte
}

// files flattens the image's layers like a runtime would.
func files(t *testing.T, img v1.Image) map[string]fileInfo {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]fileInfo{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading image filesystem: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "/")] = fileInfo{hdr: h, data: b}
	}
}

// assertWorkerImage checks the image contract and runs the binary found in the
// image with --help; it returns that output.
func assertWorkerImage(t *testing.T, img v1.Image, desc v1.Descriptor, ca []byte) string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/blobleader"}) {
		t.Errorf("entrypoint = %q, want [/blobleader]", cf.Config.Entrypoint)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532 (non-root)", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config platform = %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != "amd64" {
		t.Errorf("layout index platform = %v, want linux/amd64", desc.Platform)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", mt, types.OCIManifestSchema1)
	}

	fs := files(t, img)
	var regular []string
	for n, f := range fs {
		if f.hdr.Typeflag == tar.TypeReg {
			regular = append(regular, n)
		}
	}
	slices.Sort(regular)
	want := []string{"blobleader", "etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt"}
	if !slices.Equal(regular, want) {
		t.Errorf("files in image = %q, want exactly %q (no shell, nothing else)", regular, want)
	}
	if !bytes.Equal(fs["etc/ssl/certs/ca-certificates.crt"].data, ca) {
		t.Errorf("CA bundle in the image differs from the input bundle")
	}
	w := fs["blobleader"]
	if w.hdr == nil || w.hdr.Mode&0o111 == 0 || w.hdr.Uid != 0 || w.hdr.Mode&0o022 != 0 {
		t.Fatalf("/blobleader must be an executable owned by root and not writable by others, got %+v", w.hdr)
	}
	// ACI exec cannot pass arguments: /status is the one-word entry point.
	if l := fs["status"]; l.hdr == nil || l.hdr.Typeflag != tar.TypeSymlink || l.hdr.Linkname != "blobleader" || l.hdr.Uid != 0 {
		t.Errorf("/status must be a root-owned symlink to blobleader (ACI exec runs one word), got %+v", l.hdr)
	}

	// Run the binary exactly as extracted from the layer.
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("cannot run a linux/amd64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(bin, w.data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("/worker --help from the image failed: %v\n%s", err, out)
	}
	return string(out)
}

func TestBuild_FixtureImageRunsHelp(t *testing.T) {
	ca := testCABundle(t)
	caBytes, _ := os.ReadFile(ca)
	img, desc, _ := buildAndReopen(t, buildOptions{Binary: fixtureBinary(t), CABundle: ca})
	out := assertWorkerImage(t, img, desc, caBytes)
	if !strings.Contains(out, fixtureMarker) {
		t.Errorf("--help output = %q, want it to contain %q", out, fixtureMarker)
	}
}

func TestBuild_RealWorkerImageRunsHelp(t *testing.T) {
	bin := workerBinary(t)
	ca := testCABundle(t)
	caBytes, _ := os.ReadFile(ca)
	img, desc, _ := buildAndReopen(t, buildOptions{Binary: bin, CABundle: ca})
	out := assertWorkerImage(t, img, desc, caBytes)
	for _, flag := range []string{"account-url", "lease-duration"} {
		if !strings.Contains(out, flag) {
			t.Errorf("worker --help does not mention %q:\n%s", flag, out)
		}
	}
}

// The image's /status runs the real binary's status subcommand: the same
// bytes started under the link's name (argv[0] "/status").
func TestBuild_RealWorkerImageStatusEntryPoint(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("cannot run a linux/amd64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := workerBinary(t)
	img, _, _ := buildAndReopen(t, buildOptions{Binary: bin, CABundle: testCABundle(t)})
	fs := files(t, img)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "blobleader"), fs["blobleader"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	l := fs["status"]
	if l.hdr == nil || l.hdr.Typeflag != tar.TypeSymlink {
		t.Fatalf("the image has no /status link: %+v", l.hdr)
	}
	if err := os.Symlink(l.hdr.Linkname, filepath.Join(dir, "status")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "status"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "blobleader status") {
		t.Fatalf("/status --help from the image: %v, want the status subcommand's help:\n%s", err, out)
	}
}

// Other binaries (the chaos sidecar) get no /status link unless asked.
func TestBuild_LinksOnlyForTheWorker(t *testing.T) {
	img, _, _ := buildAndReopen(t, buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t), Name: "chaos-sidecar"})
	fs := files(t, img)
	if _, ok := fs["status"]; ok {
		t.Error("the chaos-sidecar image has a /status link")
	}
	if f := fs["chaos-sidecar"]; f.hdr == nil || f.hdr.Typeflag != tar.TypeReg {
		t.Errorf("no /chaos-sidecar in the image: %+v", f.hdr)
	}
	img, _, _ = buildAndReopen(t, buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t), Links: []string{"a", "b"}})
	fs = files(t, img)
	for _, n := range []string{"a", "b"} {
		if l := fs[n]; l.hdr == nil || l.hdr.Typeflag != tar.TypeSymlink || l.hdr.Linkname != "blobleader" {
			t.Errorf("--link %s: got %+v, want a symlink to blobleader", n, l.hdr)
		}
	}
	if _, ok := fs["status"]; ok {
		t.Error("explicit links replace the default status link")
	}
	for _, bad := range []string{"", "etc/passwd", "../x", "blobleader", "a b"} {
		if _, err := buildImage(buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t), Links: []string{bad}}); err == nil {
			t.Errorf("link name %q was accepted", bad)
		}
	}
}

func TestBuild_IsReproducible(t *testing.T) {
	o := buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t)}
	_, a, _ := buildAndReopen(t, o)
	_, b, _ := buildAndReopen(t, o)
	if a.Digest != b.Digest {
		t.Fatalf("two builds from the same inputs gave %s and %s", a.Digest, b.Digest)
	}
}

func TestBuild_DefaultCABundle(t *testing.T) {
	const machine = "/etc/ssl/certs/ca-certificates.crt"
	ca, err := os.ReadFile(machine)
	if err != nil {
		t.Skipf("this machine has no %s", machine)
	}
	img, desc, _ := buildAndReopen(t, buildOptions{Binary: fixtureBinary(t), CABundle: machine})
	assertWorkerImage(t, img, desc, ca)
}

func TestBuild_Rejects(t *testing.T) {
	fixture := fixtureBinary(t)
	ca := testCABundle(t)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noPEM := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(noPEM, []byte("nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    buildOptions
		wantErr error
		wantMsg string
	}{
		{"missing CA bundle", buildOptions{Binary: fixture, CABundle: "/nonexistent/ca.crt"}, errNoCA, "/nonexistent/ca.crt"},
		{"CA bundle without certificates", buildOptions{Binary: fixture, CABundle: noPEM}, errNoCA, "no PEM certificate"},
		{"not an ELF binary", buildOptions{Binary: notELF, CABundle: ca}, errNotStatic, "CGO_ENABLED=0"},
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if b, _ := os.ReadFile(sh); checkStaticAMD64(b) != nil {
			tests = append(tests, struct {
				name    string
				opts    buildOptions
				wantErr error
				wantMsg string
			}{"dynamically linked binary", buildOptions{Binary: sh, CABundle: ca}, errNotStatic, "dynamically linked"})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildImage(tc.opts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

func TestWriteLayout_RefusesForeignDirectory(t *testing.T) {
	img, err := buildImage(buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keep := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeLayout(dir, img, ""); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("writeLayout into a non-layout directory: err = %v, want a refusal", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the foreign file was removed: %v", err)
	}
}

// TestPush_KeepsDigest pushes to an in-memory registry on loopback and checks
// the registry serves the very manifest digest the layout holds.
func TestPush_KeepsDigest(t *testing.T) {
	_, desc, dir := buildAndReopen(t, buildOptions{Binary: fixtureBinary(t), CABundle: testCABundle(t)})
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/blobleader/worker"

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress bytes.Buffer
	ref, err := pushLayout(ctx, pushOptions{Layout: dir, Repository: repo, Insecure: true}, &progress)
	if err != nil {
		t.Fatalf("pushLayout: %v\n%s", err, progress.String())
	}
	if want := repo + "@" + desc.Digest.String(); ref.String() != want {
		t.Errorf("pushed reference = %s, want %s", ref, want)
	}
	tag, err := name.NewTag(repo+":sha256-"+desc.Digest.Hex[:16], name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Get(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pulling the pushed tag: %v", err)
	}
	if got.Digest != desc.Digest {
		t.Errorf("registry serves %s under the tag, layout holds %s", got.Digest, desc.Digest)
	}
	if !strings.Contains(progress.String(), "100%") {
		t.Errorf("push printed no completed progress:\n%s", progress.String())
	}
}

func TestRun_CommandLine(t *testing.T) {
	t.Setenv(tokenEnv, "")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"help", []string{"--help"}, 0, "Usage:"},
		{"build help", []string{"build", "--help"}, 0, "-binary"},
		{"no command", nil, 2, "Usage:"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"build without binary", []string{"build"}, 2, "--binary is required"},
		{"push without repository", []string{"push"}, 2, "--repository is required"},
		{"push without token", []string{"push", "--repository", "example.azurecr.io/x"}, 1, tokenEnv},
		{"digest of a missing layout", []string{"digest", "--layout", filepath.Join(t.TempDir(), "none")}, 1, "make image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tc.wantCode, stderr.String())
			}
			if all := stdout.String() + stderr.String(); !strings.Contains(all, tc.wantOut) {
				t.Errorf("output does not contain %q:\n%s", tc.wantOut, all)
			}
		})
	}
}

// make image must find the CA bundle where the build machine keeps it:
// Debian/Ubuntu, Fedora/RHEL, macOS and Alpine differ.
func TestFindCABundle(t *testing.T) {
	if !slices.Contains(caBundleCandidates, "/etc/ssl/cert.pem") {
		t.Errorf("the candidates %q miss macOS's /etc/ssl/cert.pem", caBundleCandidates)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.crt")
	second := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(second, []byte("-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := findCABundle([]string{missing, second}); err != nil || got != second {
		t.Fatalf("findCABundle = %q, %v; want %s", got, err, second)
	}
	_, err := findCABundle([]string{missing})
	if !errors.Is(err, errNoCA) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--ca-bundle") {
		t.Fatalf("no bundle anywhere: %v; want errNoCA naming the places looked and --ca-bundle", err)
	}
}
