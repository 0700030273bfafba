// Command image builds the blobleader worker container image without a
// container daemon and pushes it to a registry, keeping its digest.
//
// The image is made FROM nothing with go-containerregistry: one layer with the
// machine's CA bundle and a passwd entry for user 65532, one layer with the
// static worker binary at /blobleader (and /status, a symlink to it: the
// binary runs its status subcommand under that name, the one-word command
// ACI's exec can run), and an OCI config for linux/amd64 that runs
// /blobleader as 65532:65532. There is no shell. Nothing is pulled.
//
//	image build --binary out/blobleader-linux-amd64 --out out/image
//	image digest --layout out/image
//	BLOBLEADER_REGISTRY_TOKEN=… image push --layout out/image --repository <registry>/blobleader/worker
//
// Exit codes: 0 success, 2 usage error, 1 anything else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const tokenEnv = "BLOBLEADER_REGISTRY_TOKEN"

const usage = `image builds the blobleader worker image without Docker and pushes it.

Usage:
  image build  --binary PATH [--ca-bundle PATH] [--out DIR] [--tag NAME] [--name FILE] [--link NAME]...
  image digest [--layout DIR]
  image push   --repository REGISTRY/REPO [--layout DIR] [--tag TAG]

build   writes an OCI image layout (FROM nothing: CA bundle, passwd entry for
        65532, the static binary at /blobleader (--name) and, for blobleader,
        /status linked to it (--link); entrypoint /blobleader, user
        65532:65532, linux/amd64) and prints its digest.
digest  prints the digest of the image in a layout.
push    pushes the layout's image unchanged and prints REGISTRY/REPO@sha256:….
        The registry token is read from $BLOBLEADER_REGISTRY_TOKEN (for Azure:
        az acr login -n NAME --expose-token --query accessToken -o tsv),
        never from the command line.

Run "image COMMAND --help" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command; it returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "build":
		return runBuild(args[1:], stdout, stderr)
	case "digest":
		return runDigest(args[1:], stdout, stderr)
	case "push":
		return runPush(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "image: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: image %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse returns -1 to continue, or the exit code (0 after --help, 2 on a bad flag).
func parse(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "image %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2
	}
	return -1
}

func runBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("build", "build --binary PATH [--ca-bundle PATH] [--out DIR] [--tag NAME] [--name FILE] [--link NAME]...", stderr)
	var o buildOptions
	out := fs.String("out", "out/image", "directory of the OCI image layout to write (replaced if it is one)")
	fs.StringVar(&o.Binary, "binary", "", "static linux/amd64 worker binary (CGO_ENABLED=0) (required)")
	fs.StringVar(&o.CABundle, "ca-bundle", "", "PEM CA bundle to ship as /etc/ssl/certs/ca-certificates.crt (default: the first of "+strings.Join(caBundleCandidates, ", ")+" that exists)")
	fs.StringVar(&o.Tag, "tag", "blobleader/worker", "ref name recorded in the layout index")
	fs.StringVar(&o.Name, "name", defaultName, "file name of the binary at the image root; the entrypoint is /NAME")
	fs.Func("link", "add /NAME as a symlink to the binary (repeatable; default: status for blobleader, none otherwise)", func(v string) error {
		o.Links = append(o.Links, v)
		return nil
	})
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if o.Binary == "" {
		fmt.Fprintln(stderr, "image build: --binary is required (e.g. CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -o out/blobleader-linux-amd64 ./worker/cmd/blobleader)")
		return 2
	}
	if o.CABundle == "" {
		ca, err := findCABundle(caBundleCandidates)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		o.CABundle = ca
	}
	img, err := buildImage(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	d, err := writeLayout(*out, img, o.Tag)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "image: wrote OCI layout %s (entrypoint %s, user %s, %s/%s)\n", *out, o.entrypoint(), imageUser, platform.OS, platform.Architecture)
	fmt.Fprintln(stdout, d)
	return 0
}

func runDigest(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("digest", "digest [--layout DIR]", stderr)
	dir := fs.String("layout", "out/image", "OCI image layout written by `image build`")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	img, _, err := readLayoutImage(*dir)
	if err == nil {
		var d fmt.Stringer
		d, err = img.Digest()
		if err == nil {
			fmt.Fprintln(stdout, d)
			return 0
		}
	}
	fmt.Fprintln(stderr, err)
	return 1
}

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("push", "push --repository REGISTRY/REPO [--layout DIR] [--tag TAG]", stderr)
	var o pushOptions
	fs.StringVar(&o.Layout, "layout", "out/image", "OCI image layout written by `image build`")
	fs.StringVar(&o.Repository, "repository", "", "target repository, e.g. myregistry.azurecr.io/blobleader/worker (required)")
	fs.StringVar(&o.Tag, "tag", "", "tag to push as besides the digest (default sha256-<first 16 hex digits>)")
	fs.BoolVar(&o.Insecure, "insecure", false, "use plain HTTP (a loopback test registry only)")
	anonymous := fs.Bool("anonymous", false, "push without credentials (a loopback test registry only)")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if o.Repository == "" {
		fmt.Fprintln(stderr, "image push: --repository is required (the registry login server and repository, e.g. crblobleaderab12cd34.azurecr.io/blobleader/worker)")
		return 2
	}
	o.Token = os.Getenv(tokenEnv)
	if o.Token == "" && !*anonymous {
		fmt.Fprintf(stderr, "%v: set %s (az acr login -n <registry> --expose-token --query accessToken -o tsv)\n", errNoToken, tokenEnv)
		return 1
	}
	ref, err := pushLayout(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, ref)
	return 0
}
