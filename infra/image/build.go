package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Fixed facts of the worker image.
const (
	defaultName  = "blobleader"
	nonRootUID   = 65532
	imageUser    = "65532:65532"
	caBundlePath = "etc/ssl/certs/ca-certificates.crt"
	workerPort   = "8080/tcp"
	refNameKey   = "org.opencontainers.image.ref.name"
)

var platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// epoch is the timestamp of every file and of the image itself, so the same
// binary and CA bundle always give the same digest.
var epoch = time.Unix(0, 0).UTC()

var (
	errNotStatic = errors.New("image: binary is not a static linux/amd64 executable")
	errNoCA      = errors.New("image: CA bundle missing")
	errBadLink   = errors.New("image: invalid link")
)

// buildOptions are the inputs of one image build.
type buildOptions struct {
	Binary   string // path of the CGO_ENABLED=0 linux/amd64 worker binary
	CABundle string // PEM bundle copied to /etc/ssl/certs/ca-certificates.crt
	Tag      string // ref name recorded in the layout's index (annotation)
	Name     string // file name of the binary at the image root, and so the entrypoint /Name (default blobleader)
	// Links are extra names at the image root, each a symlink to /Name: the
	// binary dispatches on the name it is started under. nil means the
	// default: /status for the blobleader binary (ACI's exec runs one word,
	// so `/status` is how one asks a worker for its status), none otherwise.
	Links []string
}

// defaultLinks are the entry points the blobleader binary answers to by name
// (worker/cmd/blobleader/argv0.go).
var defaultLinks = map[string][]string{defaultName: {"status"}}

var linkName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// links returns the validated link names of this build.
func (o buildOptions) links() ([]string, error) {
	ls := o.Links
	if ls == nil {
		ls = defaultLinks[strings.TrimPrefix(o.entrypoint(), "/")]
	}
	reserved := []string{strings.TrimPrefix(o.entrypoint(), "/"), "etc", "home", "tmp"}
	for _, l := range ls {
		if !linkName.MatchString(l) || slices.Contains(reserved, l) {
			return nil, fmt.Errorf("%w: link name %q must be a plain file name (lower-case letters, digits, '.', '_', '-') other than %q", errBadLink, l, reserved)
		}
	}
	return ls, nil
}

// caBundleCandidates are where build machines keep their PEM CA bundle:
// Debian/Ubuntu, Fedora/RHEL, macOS and Alpine, Homebrew's OpenSSL.
var caBundleCandidates = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/cert.pem",
	"/opt/homebrew/etc/openssl@3/cert.pem",
	"/usr/local/etc/openssl@3/cert.pem",
}

// findCABundle returns the first candidate that exists.
func findCABundle(candidates []string) (string, error) {
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s exists on this machine; pass --ca-bundle (make image CA_BUNDLE=…)", errNoCA, strings.Join(candidates, ", "))
}

// entrypoint is where the binary lands in the image, and what the image runs.
func (o buildOptions) entrypoint() string {
	if o.Name == "" {
		return "/" + defaultName
	}
	return "/" + o.Name
}

// buildImage assembles the image FROM nothing: a layer with the CA bundle and a
// passwd entry for the non-root user, a layer with the binary, and a config
// that runs /NAME (default /blobleader) as 65532:65532 on linux/amd64. No registry is contacted.
func buildImage(o buildOptions) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: read binary: %w", err)
	}
	if err := checkStaticAMD64(bin); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (build it with CGO_ENABLED=0 GOOS=linux GOARCH=amd64)", errNotStatic, o.Binary, err)
	}
	ca, err := os.ReadFile(o.CABundle)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (install the ca-certificates package or pass --ca-bundle)", errNoCA, err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", errNoCA, o.CABundle)
	}

	base, err := tarLayer([]tarEntry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: caBundlePath, mode: 0o644, data: ca},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: nonRootUID},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	// Root-owned and not writable by the user the worker runs as; the links
	// are relative, so they resolve inside the image.
	links, err := o.links()
	if err != nil {
		return nil, err
	}
	binName := strings.TrimPrefix(o.entrypoint(), "/")
	binEntries := []tarEntry{{name: binName, mode: 0o755, data: bin}}
	for _, l := range links {
		binEntries = append(binEntries, tarEntry{name: l, mode: 0o777, link: binName})
	}
	binLayer, err := tarLayer(binEntries)
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "blobleader: CA certificates, passwd for 65532", Comment: o.CABundle}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "blobleader: static worker binary"}},
	)
	if err != nil {
		return nil, fmt.Errorf("image: append layers: %w", err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = platform.OS
	cf.Architecture = platform.Architecture
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{o.entrypoint()}
	cf.Config.Cmd = nil
	cf.Config.User = imageUser
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"SSL_CERT_FILE=/" + caBundlePath}
	cf.Config.ExposedPorts = map[string]struct{}{workerPort: {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":  "blobleader worker",
		"org.opencontainers.image.source": "https://github.com/blobleader/blobleader",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: set config: %w", err)
	}
	return img, nil
}

// checkStaticAMD64 rejects anything the image could not run: another
// architecture, or a dynamically linked binary (the image has no libc).
func checkStaticAMD64(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF file: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("ELF %v/%v, want ELFCLASS64/EM_X86_64", f.Class, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it has an ELF interpreter)")
		}
	}
	return nil
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	link string // a symlink to this target
	uid  int
	data []byte
}

// tarLayer makes an uncompressed tar in memory and wraps it as an OCI layer
// (gzip-compressed on demand, deterministic for the same input).
func tarLayer(entries []tarEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag = tar.TypeSymlink
			h.Linkname = e.link
		default:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("image: tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: tar: %w", err)
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeLayout writes img as the only image of an OCI image layout at dir. An
// existing layout there is replaced; any other non-empty directory is refused.
func writeLayout(dir string, img v1.Image, tag string) (v1.Hash, error) {
	if err := clearLayoutDir(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: write layout %s: %w", dir, err)
	}
	var opts []layout.Option
	opts = append(opts, layout.WithPlatform(platform))
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameKey: tag}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("image: write image to %s: %w", dir, err)
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: digest: %w", err)
	}
	return d, nil
}

func clearLayoutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("image: %s is not empty and is not an OCI layout; refusing to overwrite it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: remove old layout: %w", err)
	}
	return nil
}

// readLayoutImage opens the single image of an OCI layout written by writeLayout.
func readLayoutImage(dir string) (v1.Image, v1.Descriptor, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("image: open layout %s: %w (run `make image` first)", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("image: read index of %s: %w", dir, err)
	}
	if len(im.Manifests) != 1 {
		return nil, v1.Descriptor{}, fmt.Errorf("image: layout %s holds %d manifests, want exactly 1", dir, len(im.Manifests))
	}
	desc := im.Manifests[0]
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("image: open image %s: %w", desc.Digest, err)
	}
	return img, desc, nil
}
