package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

var (
	// ErrDeposed: a leader with a newer term has published; this leader must
	// stop coordinating.
	ErrDeposed = errors.New("shard: a newer leader has published")
	// errConflict: someone wrote the document since we last read it; read
	// again and decide anew.
	errConflict = errors.New("shard: document changed since read")
	// errMalformed: the document is there but is not one (not JSON, or it
	// breaks its own rules). Its ETag and writer's term are known, so its
	// owner can overwrite it; nobody follows it.
	errMalformed = errors.New("shard: document is not valid")
)

// termAbove: a document holds a term above the writer's. A newer leader
// wrote it, or someone planted it (an upload, a restore of another pool's
// copy): a document cannot tell, only the lock's record can
// (coordinator.outranked). The document's ETag is remembered, so its owner
// can overwrite it.
type termAbove struct {
	doc         string // the document's op label: "assignment", "summary"
	found, ours int64
}

func (e *termAbove) Error() string {
	return fmt.Sprintf("shard: the %s holds term %d, above ours (%d)", e.doc, e.found, e.ours)
}

// validator is a document that can check its own rules.
type validator interface{ validate() error }

// decode parses a document and checks its rules: state read from storage is
// validated, never trusted.
func decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	if vd, ok := v.(validator); ok {
		return vd.validate()
	}
	return nil
}

// fencedDoc is a JSON document in one blob that storage lets only the newest
// leader overwrite: every write is conditioned on the version the writer
// last read or wrote (storage.IfUnchanged), and carries the writer's term
// in metadata (storage.MetaTerm). A deposed leader's write after the new
// leader's first write is refused and, on reading again, it finds a newer
// term — the read-check-write of package storage, as the ledger does it.
type fencedDoc struct {
	blob *blockblob.Client
	op   string // storage op label prefix, e.g. "assignment"
	etag azcore.ETag
	seen bool // etag is valid (the blob existed when last read or written)
}

func newFencedDoc(c *container.Client, name, op string) *fencedDoc {
	return &fencedDoc{blob: c.NewBlockBlobClient(name), op: op}
}

// read downloads the document into v and remembers its ETag. found is false
// when it does not exist yet; term is the writer's term from metadata. A
// document that is not valid JSON or breaks its rules is errMalformed, with
// its ETag remembered and its metadata term returned, so that its owner can
// overwrite it (conditioned on that ETag) and a newer term's still deposes.
func (d *fencedDoc) read(ctx context.Context, v any) (term int64, found bool, err error) {
	resp, err := d.blob.DownloadStream(storage.WithOp(ctx, d.op+"_read"), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		d.etag, d.seen = "", false
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, false, err
	}
	d.etag, d.seen = *resp.ETag, true
	if err := decode(b, v); err != nil {
		return termOf(resp.Metadata), true, fmt.Errorf("%w: the %s: %v", errMalformed, d.op, err)
	}
	return termOf(resp.Metadata), true, nil
}

// write stores v under term, conditioned on the ETag we know. It returns a
// *termAbove when the document now holds a term above ours (its ETag
// remembered) and errConflict when another write of an equal or older term
// came between (read and retry).
func (d *fencedDoc) write(ctx context.Context, term int64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	t := strconv.FormatInt(term, 10)
	var read azcore.ETag // "": the blob was not there when last read
	if d.seen {
		read = d.etag
	}
	ct := "application/json"
	resp, err := d.blob.UploadBuffer(storage.WithOp(ctx, d.op+"_write"), b, &blockblob.UploadBufferOptions{
		Metadata:         map[string]*string{storage.MetaTerm: &t},
		HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: &ct},
		AccessConditions: storage.IfUnchanged(read),
	})
	if err == nil {
		d.etag, d.seen = *resp.ETag, true
		return nil
	}
	if !storage.Changed(err) {
		return err
	}
	// Someone wrote since we read. Whose term?
	props, perr := d.blob.GetProperties(storage.WithOp(ctx, d.op+"_get"), nil)
	if perr != nil {
		return fmt.Errorf("%w (and reading it back failed: %v)", errConflict, perr)
	}
	if other := termOf(props.Metadata); other > term {
		d.etag, d.seen = *props.ETag, true
		return &termAbove{doc: d.op, found: other, ours: term}
	}
	d.seen = false // force the caller to read again before writing
	return errConflict
}

// is reports whether etag (e.g. from a listing) names the version of the
// document this writer last read or wrote. Storage quotes the ETag in a
// header ("0x8D…") and not in a listing (0x8D…).
func (d *fencedDoc) is(etag azcore.ETag) bool {
	unquote := func(e azcore.ETag) string { return strings.Trim(string(e), `"`) }
	return d.seen && unquote(etag) == unquote(d.etag)
}

// termOf is the writer's term a document's metadata names; one that is
// not a term reads as 0, below every leader's.
func termOf(md map[string]*string) int64 {
	t, _ := storage.Term(md)
	return t
}

// readJSON downloads a small JSON blob into v (reports) and checks its
// rules. found is false when it does not exist.
func readJSON(ctx context.Context, c *container.Client, name, op string, v any) (found bool, err error) {
	resp, err := c.NewBlobClient(name).DownloadStream(storage.WithOp(ctx, op), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return false, err
	}
	if err := decode(b, v); err != nil {
		return true, fmt.Errorf("%w: %s: %v", errMalformed, name, err)
	}
	return true, nil
}
