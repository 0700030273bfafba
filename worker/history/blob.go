package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
// A history blob deleted under the sink (alone, or with its container) is
// made again: the sink goes on in the next blob (creating the container if
// it has to), whose first record is a history_dropped counting the records
// that went with the deleted one; so does a blob someone replaced with one
// that takes no appends. Records the sink gives up on at Close are counted
// too. A flush that keeps failing is logged once, then at most once a
// minute with how many attempts failed (docs/architecture.md#logs).
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
	written int64  // drops already announced in storage by a history_dropped record
	why     string // what the next history_dropped record says the loss was

	// Only the flusher (loop, then Close) touches the rest.
	seg       int
	blocks    int   // committed blocks in the current segment
	created   bool  // the current segment exists
	length    int64 // the current segment's committed length, when known
	known     bool  // length and blocks are known (no write of unknown outcome since)
	inSegment int64 // records (not history_dropped lines) landed in the current segment
	unsent    *batch
	failing   failing

	stop chan struct{}
	done chan struct{}

	closeOnce sync.Once
	closeErr  error // Close's answer, given again to later calls
}

// batch is one append: its bytes, frozen once sent to a segment, and where
// it must land.
type batch struct {
	body    []byte
	pos     int64 // the segment's length it was built for: the append position
	lost    int64 // drops its history_dropped record announces (0: none)
	records int64 // records in it (history_dropped lines aside)
}

// failing is the flusher's run of failed flushes, for a log that says so
// once, then at most once per failLogEvery.
type failing struct {
	n      int       // failed flushes in a row
	since  time.Time // the first of them
	toldAt time.Time // when a warning about them was last logged
}

// failLogEvery spaces the warnings about a flush that keeps failing.
const failLogEvery = time.Minute

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
			b.report(b.flush(ctx))
			cancel()
		}
	}
}

// report logs a failed flush: the first of a run at once, then at most once
// per failLogEvery with how many failed and what waits; and the recovery.
func (b *Blob) report(err error) {
	f, now := &b.failing, time.Now()
	if err == nil {
		if f.n > 0 {
			b.log.Info("history flush recovered", "blob", b.Name(), "failed_flushes", f.n, "for", now.Sub(f.since).Round(time.Millisecond).String())
		}
		*f = failing{}
		return
	}
	if f.n == 0 {
		f.since = now
	}
	f.n++
	if f.n > 1 && now.Sub(f.toldAt) < failLogEvery {
		return
	}
	f.toldAt = now
	b.mu.Lock()
	pending := len(b.pending)
	b.mu.Unlock()
	b.log.Warn("history flush failed; will retry", "blob", b.Name(), "err", err, "failed_flushes", f.n,
		"since", f.since.UTC().Format(time.RFC3339Nano), "pending", pending, "dropped", b.Dropped())
}

// EventDropped is the record a Blob sink writes ahead of the records that
// follow a drop; Dropped says how many records were lost since the last one.
const EventDropped = "history_dropped"

// reasonBufferFull is what a history_dropped record says by default.
const reasonBufferFull = "history buffer full while storage was unreachable"

// droppedLine is the history_dropped record for n lost records, lost for
// the reason why.
func (b *Blob) droppedLine(n int64, why string) []byte {
	now := time.Now()
	line, _ := Record{
		T: now.UTC().Format(time.RFC3339Nano), MonoNS: int64(now.Sub(b.start)), Identity: b.identity,
		Event: EventDropped, Dropped: n, Reason: why,
	}.line()
	return line
}

// flush writes what is pending: first the batch whose outcome is still
// unknown, if any, then the records queued since, preceded by a
// history_dropped record when records were lost. Records stay queued on
// error. A segment found gone is replaced at once, in the same flush.
func (b *Blob) flush(ctx context.Context) error {
	err := b.flushOnce(ctx)
	if errors.Is(err, errGone) {
		err = b.flushOnce(ctx)
	}
	return err
}

// errGone: the current segment was gone; the sink has moved to the next.
var errGone = errors.New("history: the history blob is gone")

func (b *Blob) flushOnce(ctx context.Context) error {
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
		body = b.droppedLine(lost, b.lossReason())
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
	return &batch{body: body, pos: b.length, lost: lost, records: int64(n)}
}

// lossReason is what the next history_dropped record says (b.mu held).
func (b *Blob) lossReason() string {
	if b.why == "" {
		return reasonBufferFull
	}
	return b.why
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
	case gone(err):
		b.segmentGone(err)
		return fmt.Errorf("%w: %v", errGone, err)
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
	b.inSegment += a.records
	b.unsent = nil
	b.mu.Lock()
	b.written += a.lost
	if b.written == b.dropped.Load() {
		b.why = ""
	}
	b.mu.Unlock()
}

// gone reports an answer that says the current segment is no longer there
// to append to: deleted (alone, or with the container), or replaced by a
// blob of another type that takes no appends.
func gone(err error) bool {
	return bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound, bloberror.InvalidBlobType)
}

// segmentGone moves the sink to the next segment after the current one went
// away: the records that had landed in it are lost with it — counted as
// dropped and announced by a history_dropped record at the head of the next
// segment. A batch not yet landed is not lost: it goes to the next segment,
// led by that record (nothing of it can land in the old segment's name any
// more, so it may change).
func (b *Blob) segmentGone(err error) {
	name, lost := b.Name(), b.inSegment
	why := fmt.Sprintf("history blob %s was deleted or replaced (%s) with %d records written to it", name, code(err), lost)
	b.log.Warn("history blob gone; continuing in a new one", "blob", name, "lost", lost, "err", err)
	b.seg++
	b.created, b.blocks, b.length, b.known, b.inSegment = false, 0, 0, true, 0
	if lost == 0 {
		if b.unsent != nil {
			b.unsent.pos = 0
		}
		return
	}
	b.dropped.Add(lost)
	if b.unsent == nil {
		b.mu.Lock()
		b.why = why
		b.mu.Unlock()
		return
	}
	b.unsent.body = append(b.droppedLine(lost, why), b.unsent.body...)
	b.unsent.lost += lost
	b.unsent.pos = 0
}

// code is the storage error code of err, or its text.
func code(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.ErrorCode != "" {
		return re.ErrorCode
	}
	return err.Error()
}

// sync reads the segment's length and block count after a write of unknown
// outcome, and settles the unsent batch: the length its position plus its
// size means it landed; its position, that it did not (it is sent again).
// Any other length means someone else appended to this process's blob: the
// batch goes after what is there, and the history may hold it twice.
func (b *Blob) sync(ctx context.Context) error {
	props, err := b.c.NewAppendBlobClient(b.Name()).GetProperties(storage.WithOp(ctx, "history_read"), nil)
	if gone(err) {
		b.segmentGone(err)
		return fmt.Errorf("%w: %v", errGone, err)
	}
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
// flush until ctx ends. Records it could not write by then are lost, and
// counted in Dropped. Only the first call does this; later ones (a
// shutdown path reached twice, a test's cleanup) wait for it and give its
// answer.
func (b *Blob) Close(ctx context.Context) error {
	b.closeOnce.Do(func() { b.closeErr = b.close(ctx) })
	return b.closeErr
}

func (b *Blob) close(ctx context.Context) error {
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
				b.mu.Lock()
				lost := int64(len(b.pending))
				b.pending, b.size = nil, 0
				b.mu.Unlock()
				if b.unsent != nil {
					lost += b.unsent.records
				}
				b.dropped.Add(lost)
				return fmt.Errorf("history: final flush: %d records not written (%d dropped in all): %w", lost, b.Dropped(), err)
			case <-time.After(closeRetryPause):
			}
		}
	}
	if d := b.Dropped(); d > 0 {
		return fmt.Errorf("history: %d records dropped (storage unreachable, or deleted with a history blob)", d)
	}
	return nil
}

// closeRetryPause spaces Close's attempts while storage fails.
const closeRetryPause = 100 * time.Millisecond
