package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// acrTokenUser is the user name Azure Container Registry expects with the
// token `az acr login --expose-token` prints.
const acrTokenUser = "00000000-0000-0000-0000-000000000000"

var errNoToken = errors.New("image: no registry token")

// pushOptions are the inputs of one push.
type pushOptions struct {
	Layout     string // OCI layout written by `image build`
	Repository string // e.g. crblobleaderXXXX.azurecr.io/blobleader/worker
	Tag        string // human-readable tag; empty derives one from the digest
	Token      string // ACR access token (password for acrTokenUser); empty = anonymous
	Insecure   bool   // plain HTTP (tests against a loopback registry only)
}

// pushLayout pushes the layout's image unchanged (same manifest bytes, so the
// same digest) and returns the digest-pinned reference repository@sha256:….
func pushLayout(ctx context.Context, o pushOptions, progress io.Writer) (name.Digest, error) {
	img, _, err := readLayoutImage(o.Layout)
	if err != nil {
		return name.Digest{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: digest: %w", err)
	}
	tag := o.Tag
	if tag == "" {
		tag = "sha256-" + d.Hex[:16]
	}
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	repo := strings.TrimSuffix(o.Repository, "/")
	tagRef, err := name.NewTag(repo+":"+tag, nameOpts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: repository %q: %w", o.Repository, err)
	}
	digestRef, err := name.NewDigest(repo+"@"+d.String(), nameOpts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: repository %q: %w", o.Repository, err)
	}

	auth := authn.Anonymous
	if o.Token != "" {
		auth = authn.FromConfig(authn.AuthConfig{Username: acrTokenUser, Password: o.Token})
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}

	updates := make(chan v1.Update, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := int64(-1)
		for u := range updates {
			if u.Total > 0 && (u.Complete == u.Total || u.Complete-last >= u.Total/10) {
				fmt.Fprintf(progress, "push: %3d%% (%d/%d bytes)\n", u.Complete*100/u.Total, u.Complete, u.Total)
				last = u.Complete
			}
		}
	}()
	fmt.Fprintf(progress, "push: %s -> %s\n", d, tagRef)
	err = remote.Write(tagRef, img, append(opts, remote.WithProgress(updates))...)
	<-done
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: push %s: %w", tagRef, err)
	}

	// The registry must serve the manifest under the digest we pin.
	got, err := remote.Head(digestRef, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: verify %s: %w", digestRef, err)
	}
	if got.Digest != d {
		return name.Digest{}, fmt.Errorf("image: registry serves %s for %s", got.Digest, digestRef)
	}
	return digestRef, nil
}
