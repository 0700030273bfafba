package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
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
type Blob struct {
	c          *container.Client
	identity   string
	start      time.Time
	prefix     string
	log        *slog.Logger
	flushEvery time.Duration
	maxBuffer  int // bytes

	mu      sync.Mutex
	pending [][]byte // encoded lines not yet written
	base    int64    // absolute index of pending[0] (records ever removed from the head)
	size    int
	dropped atomic.Int64
	written int64 // drops already announced in storage by a history_dropped record

	seg     int
	blocks  int
	created bool

	stop chan struct{}
	done chan struct{}
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
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, line)
	b.size += len(line)
	for b.size > b.maxBuffer && len(b.pending) > 1 {
		b.size -= len(b.pending[0])
		b.pending = b.pending[1:]
		b.base++
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
	line, _ := json.Marshal(Record{
		T: now.UTC().Format(time.RFC3339Nano), MonoNS: int64(now.Sub(b.start)), Identity: b.identity,
		Event: EventDropped, Dropped: n, Reason: "history buffer full while storage was unreachable",
	})
	return append(line, '\n')
}

// flush writes everything pending as one block (records stay queued on
// error), preceded by a history_dropped record when records were lost.
func (b *Blob) flush(ctx context.Context) error {
	b.mu.Lock()
	batch, from := b.pending, b.base
	lost := b.dropped.Load() - b.written
	b.mu.Unlock()
	if lost > 0 {
		batch = append([][]byte{b.droppedLine(lost)}, batch...)
	}
	if len(batch) == 0 {
		return nil
	}
	if !b.created || b.blocks >= segmentBlocks {
		if b.created {
			b.seg++
		}
		if err := b.create(ctx); err != nil {
			return err
		}
	}
	body := bytes.Join(batch, nil)
	client := b.c.NewAppendBlobClient(b.Name())
	if _, err := client.AppendBlock(storage.WithOp(ctx, "history_append"), streaming.NopCloser(bytes.NewReader(body)), nil); err != nil {
		return err
	}
	b.blocks++
	b.mu.Lock()
	b.written += lost
	if lost > 0 {
		batch = batch[1:]
	}
	// Remove what we wrote. Write may have dropped some of it from the head
	// meanwhile, so count in absolute indexes.
	n := max(0, from+int64(len(batch))-b.base)
	for _, l := range b.pending[:n] {
		b.size -= len(l)
	}
	b.pending = b.pending[n:]
	b.base += n
	b.mu.Unlock()
	return nil
}

func (b *Blob) create(ctx context.Context) error {
	client := b.c.NewAppendBlobClient(b.Name())
	_, err := client.Create(storage.WithOp(ctx, "history_create"), nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		// Locally (Azurite) nobody made the container; on Azure Terraform did
		// (and our role may not create containers).
		if cerr := storage.EnsureContainer(ctx, b.c); cerr != nil {
			return cerr
		}
		_, err = client.Create(storage.WithOp(ctx, "history_create"), nil)
	}
	if err != nil {
		return err
	}
	b.created, b.blocks = true, 0
	return nil
}

// Close stops the flusher and writes what is pending, within ctx.
func (b *Blob) Close(ctx context.Context) error {
	close(b.stop)
	<-b.done
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("history: final flush: %w", err)
	}
	if d := b.Dropped(); d > 0 {
		return fmt.Errorf("history: %d records dropped while storage was unreachable", d)
	}
	return nil
}
