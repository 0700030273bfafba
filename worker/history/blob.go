package history

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// Container is where `--history blob` writes: one folder per identity, one
// append blob per process (and per 40,000 flushes, below Azure's 50,000
// blocks per append blob), named <identity>/<process start, unix ns>-<n>.jsonl.
const Container = "history"

// Blob appends records to an append blob in batches, flushed at least every
// FlushEvery. Write never blocks: records wait in a bounded buffer and the
// oldest are dropped (and counted) if storage stays unreachable that long.
// Drops are not silent: the next flush writes a history_dropped record with
// the count first, so whoever reads the history knows it has a hole.
//
// Every record is written once. Each append carries the position it must
// land at (the blob's committed length); an append whose outcome the sink
// did not learn (a timeout, a lost answer) is sent again byte for byte at
// the same position, so at most one copy can land, and an answer that says
// the position moved (412) is checked against the blob's length: the batch
// is written when the length is the position plus the batch.
type Blob struct {
	c          *container.Client
	identity   string
	start      time.Time
	prefix     string
	log        *slog.Logger
	flushEvery time.Duration
	maxBuffer  int // bytes

	mu      sync.Mutex
	pending [][]byte // encoded lines not yet in a batch
	size    int      // bytes in pending
	dropped atomic.Int64
	written int64 // drops already announced in storage by a history_dropped record

	// Only the flusher (loop, then Close) touches the rest.
	seg     int
	blocks  int   // committed blocks in the current segment
	created bool  // the current segment exists
	length  int64 // the current segment's committed length, when known
	known   bool  // length and blocks are known (no write of unknown outcome since)
	unsent  *batch

	stop chan struct{}
	done chan struct{}
}

// batch is one append: its bytes, frozen once sent, and where it must land.
type batch struct {
	body []byte
	pos  int64 // the segment's length it was built for: the append position
	lost int64 // drops its history_dropped record announces (0: none)
}

// BlobOptions tune a Blob sink; zero values take defaults.
type BlobOptions struct {
	FlushEvery time.Duration // default 1s
	MaxBuffer  int           // bytes held while storage is unreachable; default 4 MiB
	Logger     *slog.Logger
}

const segmentBlocks = 40000

// OpenBlob starts a sink writing into container c (normally Container) for
// identity; start names this process's blobs.
func OpenBlob(c *container.Client, identity string, start time.Time, opts BlobOptions) *Blob {
	b := &Blob{
		c: c, identity: identity, start: start, prefix: fmt.Sprintf("%s/%d", identity, start.UnixNano()),
		log: opts.Logger, flushEvery: opts.FlushEvery, maxBuffer: opts.MaxBuffer,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if b.flushEvery <= 0 {
		b.flushEvery = time.Second
	}
	if b.maxBuffer <= 0 {
		b.maxBuffer = 4 << 20
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	go b.loop()
	return b
}

// Write queues one record; it never waits on storage.
func (b *Blob) Write(r Record) error {
	line, err := r.line()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, line)
	b.size += len(line)
	for b.size > b.maxBuffer && len(b.pending) > 1 {
		b.size -= len(b.pending[0])
		b.pending = b.pending[1:]
		b.dropped.Add(1)
	}
	return nil
}

// Dropped counts records lost to a full buffer.
func (b *Blob) Dropped() int64 { return b.dropped.Load() }

// Name is the blob currently written.
func (b *Blob) Name() string { return fmt.Sprintf("%s-%04d.jsonl", b.prefix, b.seg) }

func (b *Blob) loop() {
	defer close(b.done)
	t := time.NewTicker(b.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), b.flushEvery)
			if err := b.flush(ctx); err != nil {
				b.log.Warn("history flush failed; will retry", "blob", b.Name(), "err", err)
			}
			cancel()
		}
	}
}

// EventDropped is the record a Blob sink writes ahead of the records that
// follow a drop; Dropped says how many records were lost since the last one.
const EventDropped = "history_dropped"

// droppedLine is the history_dropped record for n lost records.
func (b *Blob) droppedLine(n int64) []byte {
	now := time.Now()
	line, _ := Record{
		T: now.UTC().Format(time.RFC3339Nano), MonoNS: int64(now.Sub(b.start)), Identity: b.identity,
		Event: EventDropped, Dropped: n, Reason: "history buffer full while storage was unreachable",
	}.line()
	return line
}

// flush writes what is pending: first the batch whose outcome is still
// unknown, if any, then the records queued since, preceded by a
// history_dropped record when records were lost. Records stay queued on
// error.
func (b *Blob) flush(ctx context.Context) error {
	if b.unsent == nil {
		if b.created && b.blocks >= segmentBlocks {
			b.seg++
			b.created = false
		}
	}
	if !b.created {
		if !b.hasPending() {
			return nil
		}
		if err := b.create(ctx); err != nil {
			return err
		}
	}
	if b.unsent != nil {
		if err := b.append(ctx, b.unsent); err != nil {
			return err
		}
	}
	if b.blocks >= segmentBlocks {
		return nil // the next flush opens the next segment
	}
	if !b.known {
		if err := b.sync(ctx); err != nil {
			return err
		}
	}
	next := b.take()
	if next == nil {
		return nil
	}
	return b.append(ctx, next)
}

func (b *Blob) hasPending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) > 0 || b.dropped.Load() > b.written
}

// maxAppend is the largest block an append may carry (Azure's limit for the
// API versions Azurite implements: 4 MiB).
const maxAppend = 4 << 20

// take moves the pending records (up to maxAppend bytes) into a batch for
// the segment's current length, led by a history_dropped record when
// records were lost since the last one written; nil when nothing is pending.
func (b *Blob) take() *batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	lost := b.dropped.Load() - b.written
	if len(b.pending) == 0 && lost <= 0 {
		return nil
	}
	var body []byte
	if lost > 0 {
		body = b.droppedLine(lost)
	} else {
		lost = 0
	}
	n := 0
	for n < len(b.pending) && (n == 0 || len(body)+len(b.pending[n]) <= maxAppend) {
		body = append(body, b.pending[n]...)
		b.size -= len(b.pending[n])
		n++
	}
	b.pending = b.pending[n:]
	return &batch{body: body, pos: b.length, lost: lost}
}

// append sends batch a at its position. Once sent, a stays the unsent
// batch, unchanged, until storage has it: resending the same bytes at the
// same position can land at most once. A 412 says the position moved; the
// blob's length then says whether it was our batch that landed.
func (b *Blob) append(ctx context.Context, a *batch) error {
	b.unsent = a
	client := b.c.NewAppendBlobClient(b.Name())
	_, err := client.AppendBlock(storage.WithOp(ctx, "history_append"), streaming.NopCloser(bytes.NewReader(a.body)),
		&appendblob.AppendBlockOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &a.pos}})
	switch {
	case err == nil:
		b.landed(a)
		return nil
	case bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet):
		b.known = false
		if err := b.sync(ctx); err != nil {
			return err
		}
		if b.unsent != nil {
			return fmt.Errorf("history: %s: append position moved to %d; the batch is sent again there", b.Name(), b.length)
		}
		return nil
	default:
		b.known = false // it may have landed: the next flush resends it as is
		return err
	}
}

// landed records that batch a is in the blob.
func (b *Blob) landed(a *batch) {
	b.length, b.known = a.pos+int64(len(a.body)), true
	b.blocks++
	b.unsent = nil
	b.mu.Lock()
	b.written += a.lost
	b.mu.Unlock()
}

// sync reads the segment's length and block count after a write of unknown
// outcome, and settles the unsent batch: the length its position plus its
// size means it landed; its position, that it did not (it is sent again).
// Any other length means someone else appended to this process's blob: the
// batch goes after what is there, and the history may hold it twice.
func (b *Blob) sync(ctx context.Context) error {
	props, err := b.c.NewAppendBlobClient(b.Name()).GetProperties(storage.WithOp(ctx, "history_read"), nil)
	if err != nil {
		return err
	}
	if props.ContentLength == nil {
		return fmt.Errorf("history: %s: no content length in the answer", b.Name())
	}
	b.length, b.known = *props.ContentLength, true
	if props.BlobCommittedBlockCount != nil {
		b.blocks = int(*props.BlobCommittedBlockCount)
	}
	a := b.unsent
	switch {
	case a == nil, b.length == a.pos:
	case b.length == a.pos+int64(len(a.body)):
		b.blocks--
		b.landed(a)
	default:
		b.log.Warn("history blob changed by another writer; appending after it", "blob", b.Name(),
			"length", b.length, "expected", a.pos)
		a.pos = b.length
	}
	return nil
}

// create makes the current segment if it does not exist yet. It never
// replaces one: a create whose answer was lost, or that lands late, meets
// the blob already there, whose length sync then reads.
func (b *Blob) create(ctx context.Context) error {
	client := b.c.NewAppendBlobClient(b.Name())
	opts := &appendblob.CreateOptions{AccessConditions: storage.IfUnchanged("")} // only while there is none
	_, err := client.Create(storage.WithOp(ctx, "history_create"), opts)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		// Locally (Azurite) nobody made the container; on Azure Terraform did
		// (and our role may not create containers).
		if cerr := storage.EnsureContainer(ctx, b.c); cerr != nil {
			return cerr
		}
		_, err = client.Create(storage.WithOp(ctx, "history_create"), opts)
	}
	switch {
	case err == nil:
		b.created, b.blocks, b.length, b.known = true, 0, 0, true
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		b.created, b.known = true, false
	default:
		return err
	}
	return nil
}

// Close stops the flusher and writes what is pending, retrying a failed
// flush until ctx ends.
func (b *Blob) Close(ctx context.Context) error {
	close(b.stop)
	<-b.done
	for {
		err := b.flush(ctx)
		if err == nil && b.unsent == nil && !b.hasPending() {
			break
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("history: final flush: %w", err)
			case <-time.After(closeRetryPause):
			}
		}
	}
	if d := b.Dropped(); d > 0 {
		return fmt.Errorf("history: %d records dropped while storage was unreachable", d)
	}
	return nil
}

// closeRetryPause spaces Close's attempts while storage fails.
const closeRetryPause = 100 * time.Millisecond
