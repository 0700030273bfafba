package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// DefaultContainer holds the control blobs.
const DefaultContainer = "chaos"

// Store reads and writes one worker's control blobs in the control
// container: plans/<name>.json (the harness writes, the sidecar reads) and
// state/<name>.json (the other way round).
type Store struct {
	C    *container.Client
	Name string // the worker's container group name
}

// PlanBlob and StateBlob are the control blobs' names for a worker.
func PlanBlob(name string) string  { return "plans/" + name + ".json" }
func StateBlob(name string) string { return "state/" + name + ".json" }

// maxBlob bounds what is read from a control blob.
const maxBlob = 1 << 20

// ReadPlan downloads the plan unless its ETag is still etag (then changed is
// false and the plan is empty). A missing blob is the empty plan, version 0.
func (s *Store) ReadPlan(ctx context.Context, etag azcore.ETag) (p Plan, tag azcore.ETag, changed bool, err error) {
	opts := &blob.DownloadStreamOptions{}
	if etag != "" {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etag}}
	}
	resp, err := s.C.NewBlobClient(PlanBlob(s.Name)).DownloadStream(ctx, opts)
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotModified:
		return Plan{}, etag, false, nil
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return Plan{}, "", etag != "", nil
	case err != nil:
		return Plan{}, etag, false, fmt.Errorf("sidecar: read plan %s: %w", PlanBlob(s.Name), err)
	}
	if resp.Body == nil { // 304: the SDK answers a not-modified GET without a body
		return Plan{}, etag, false, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBlob))
	if err != nil {
		return Plan{}, etag, false, fmt.Errorf("sidecar: read plan %s: %w", PlanBlob(s.Name), err)
	}
	if resp.ETag != nil {
		tag = *resp.ETag
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Plan{}, tag, true, fmt.Errorf("%w: %s is not a plan: %v", ErrPlan, PlanBlob(s.Name), err)
	}
	return p, tag, true, nil
}

// WritePlan replaces the plan (the harness's side).
func (s *Store) WritePlan(ctx context.Context, p Plan) error {
	return s.put(ctx, PlanBlob(s.Name), p)
}

// ReadState downloads the sidecar's last state; ok is false when there is
// none yet.
func (s *Store) ReadState(ctx context.Context) (st State, ok bool, err error) {
	resp, err := s.C.NewBlobClient(StateBlob(s.Name)).DownloadStream(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("sidecar: read state %s: %w", StateBlob(s.Name), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBlob))
	if err != nil {
		return State{}, false, fmt.Errorf("sidecar: read state %s: %w", StateBlob(s.Name), err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, false, fmt.Errorf("sidecar: %s is not a state: %v", StateBlob(s.Name), err)
	}
	return st, true, nil
}

// WriteState replaces the state (the sidecar's side).
func (s *Store) WriteState(ctx context.Context, st State) error {
	return s.put(ctx, StateBlob(s.Name), st)
}

func (s *Store) put(ctx context.Context, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ct := "application/json"
	_, err = s.C.NewBlockBlobClient(name).Upload(ctx, nopCloser{bytes.NewReader(b)}, &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct},
	})
	if err != nil {
		return fmt.Errorf("sidecar: write %s: %w", name, err)
	}
	return nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
