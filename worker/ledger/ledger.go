// Package ledger is the reference leader task's side effect: an append-only
// sequence of entries {seq, term, holder, at} in blob storage, written so that
// storage itself refuses a deposed leader's write (invariant S2;
// docs/architecture.md#the-fenced-ledger-the-reference-leader-task).
//
// Layout: append blobs "<blob>-ledger/00000001", "…/00000002", … in the
// election's container. Each block is one JSON line. A segment's metadata
// holds the highest term that has fenced it and the holder that stamped it,
// the first seq it holds, and whether it is sealed (full; the next segment
// continues the sequence).
//
// Fencing: a new leader of term T first stamps term=T into the current
// segment's metadata, conditioned on the ETag it just read (If-Match). That
// write changes the ETag, and every append is conditioned on the writer's
// last known ETag, so a deposed leader's next append fails with 412. Sealing
// and opening the next segment are conditioned the same way (If-Match on the
// old segment, If-None-Match on the new one), so rotation cannot fork the
// sequence.
//
// A 412 says the segment changed, not who changed it, and a write whose
// answer was lost may have landed: so a writer decides it is fenced only
// from the term it reads back (one read-check path, catchUp, for Open and
// for every write of unknown outcome). A newer term — or our term under
// another holder — is a fence; our own term and holder is a request of ours
// that landed (an Open that failed after its stamp, a create or append whose
// answer was lost or that arrived late), and the writer carries on after it.
//
// A segment of another blob type (a segment re-uploaded as a block blob,
// which takes no appends and keeps none of the metadata) is foreign: a
// writer opening a new term reads it, seals it under its term (conditioned
// on the ETag it read) and continues in the next segment after its last
// entry; its lines stay as found, and ListSegments names it. A writer in the
// middle of its term cannot tell whether a newer term's stamp went with the
// metadata, so for it a foreign segment is a fence (a new term repairs it).
//
// A last segment that is not a ledger at all (lines that are not entries:
// the wrong file uploaded, of either blob type) is repaired the same way by
// the writer that holds the ledger's term: it keeps the segment as found,
// stamps it sealed and "not a ledger" under its term, and continues in the
// next segment after the last entry it can read before it. Readers skip
// such a segment and ListSegments names it.
package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// Entry is one ledger record.
type Entry struct {
	Seq    int64     `json:"seq"`
	Term   int64     `json:"term"`
	Holder string    `json:"holder"`
	At     time.Time `json:"at"`
}

var (
	// ErrFenced: storage refused the write because a newer term has taken
	// the ledger. The writer must stop; it is no longer the leader.
	ErrFenced = errors.New("ledger: fenced by a newer term")
	// ErrCorrupt: the ledger read back breaks its own rules.
	ErrCorrupt = errors.New("ledger: corrupt")
	// ErrNotFound: ReadAll found no segment of the ledger (or no container).
	ErrNotFound = errors.New("ledger: not found")
)

// TermAbove is the ErrFenced of a writer that found the ledger holding a
// term above its own: Term is the highest term the ledger holds (a newer
// leader's, or one written by hand or restored from elsewhere: the lock's
// record tells which), Ours the writer's.
type TermAbove struct {
	Segment    int
	Term, Ours int64
	Holder     string // who stamped it, as the segment says
}

func (e *TermAbove) Error() string {
	return fmt.Sprintf("%v: segment %d holds term %d (holder %q), we are term %d", ErrFenced, e.Segment, e.Term, e.Holder, e.Ours)
}

func (e *TermAbove) Unwrap() error { return ErrFenced }

// DefaultSegmentLimit keeps a segment below Azure's 50,000 blocks per append blob.
const DefaultSegmentLimit = 45000

const (
	metaFirst  = "first"
	metaSealed = "sealed"
	// metaHolder names the writer that stamped or created the segment
	// (query-escaped, so any holder fits in a metadata value). With the term
	// it tells a writer its own earlier stamp from another's.
	metaHolder = "holder"
	// metaNotALedger marks a segment a writer found not to be a ledger and
	// kept as found ("true"); readers skip it.
	metaNotALedger = "notaledger"
)

// Prefix is where the ledger of the election blob `blob` lives.
func Prefix(blob string) string { return blob + "-ledger/" }

func segmentName(blob string, n int) string { return fmt.Sprintf("%s%08d", Prefix(blob), n) }

// Writer appends entries for one leadership term.
type Writer struct {
	c            *container.Client
	blob         string
	term         int64
	holder       string
	segmentLimit int
	onForeign    func(int, string)
	onNotALedger func(int, string)

	seg    int         // current segment number
	first  int64       // first seq of the current segment
	blocks int         // blocks in the current segment
	etag   azcore.ETag // of our last write
	next   int64       // next seq
	unsure bool        // last write's outcome unknown: resync before the next
}

// Options tune a Writer; zero values take defaults.
type Options struct {
	SegmentLimit int // entries per segment; default DefaultSegmentLimit
	// OnForeign, if set, is told once per foreign segment this writer sealed
	// and continued past: its number and blob type.
	OnForeign func(segment int, blobType string)
	// OnNotALedger, if set, is told once per segment this writer found not
	// to be a ledger (lines it cannot read), kept as found and continued
	// past: its number and blob type.
	OnNotALedger func(segment int, blobType string)
}

// Open fences the ledger for term and returns a writer positioned after the
// last entry. It returns ErrFenced if a newer term already holds it (or an
// older one: the same term again means a retry of our own Open).
func Open(ctx context.Context, c *container.Client, blob string, term int64, holder string, opts Options) (*Writer, error) {
	w := &Writer{c: c, blob: blob, term: term, holder: holder, segmentLimit: opts.SegmentLimit, onForeign: opts.OnForeign,
		onNotALedger: opts.OnNotALedger}
	if w.segmentLimit <= 0 {
		w.segmentLimit = DefaultSegmentLimit
	}
	// A concurrent append by the deposed leader can change the ETag between
	// our read and our stamp; that is a lost race, not a fence: try again
	// (the stamp must stay conditional, or it could overwrite a newer term).
	// The deposed leader stops within its renew deadline, so this ends.
	for attempt := 0; ; attempt++ {
		err := w.catchUp(ctx, claim)
		if !errors.Is(err, errRace) {
			if err != nil {
				return nil, err
			}
			return w, nil
		}
		backoff := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)) + 1))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ledger: could not fence in %d attempts: %w", attempt+1, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

var (
	// errRace: the segment changed between two of our requests, or a
	// segment we meant to create appeared. Read again; the term decides.
	errRace   = errors.New("ledger: concurrent write")
	errExists = errors.New("ledger: segment exists")
)

// catchUpMode says what catchUp does with a ledger an older term holds.
type catchUpMode int

const (
	// claim (Open): stamp our term over the older one.
	claim catchUpMode = iota
	// resume (a writer whose last write's outcome is unknown): the ledger
	// must still be ours; any other term has fenced us.
	resume
)

// catchUp is the one read-check path of Open and of a writer that lost track
// of its last write: read the last segment's term under its ETag, decide
// from the term alone whether we are fenced, and position the writer after
// the last entry.
//
// The term (with the holder) is the whole evidence. Terms are unique to a
// leadership, so a segment that holds our own term and holder was stamped or
// created by us — a request of ours whose answer was lost, or an Open that
// failed after its stamp — and is ours to continue, never a fence. A newer
// term fences us; so does our term under another holder (a term handed out
// twice, which the election's term floor prevents: we refuse rather than
// share it).
func (w *Writer) catchUp(ctx context.Context, mode catchUpMode) error {
	segs, err := segments(ctx, w.c, w.blob)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		if mode == resume {
			return fmt.Errorf("%w: the ledger is gone while we held it", ErrFenced)
		}
		// 1. An empty ledger: create segment 1, already stamped with our
		// term (another writer, or a late request of ours, may make it
		// first: a race).
		if err := w.open(ctx, 1, 1); err != nil {
			return err
		}
		w.next = 1
		return nil
	}

	// 2–3. Check the last segment's term, and make it ours.
	seg := segs[len(segs)-1].n
	etag, first, sealed, err := w.claimLast(ctx, segs, mode)
	var notLedger *notALedger
	if errors.As(err, &notLedger) {
		return w.keepNotALedger(ctx, segs, notLedger)
	}
	if err != nil {
		return err
	}
	if segs[len(segs)-1].notALedger {
		// Kept by a writer that went past it, which did not get to open
		// the next segment: open it.
		if w.next, err = nextAfter(ctx, w.c, w.blob, segs[:len(segs)-1]); err != nil {
			return err
		}
		return w.open(ctx, seg+1, w.next)
	}

	// 4. The segment is ours: read it as of that ETag to find where the
	// sequence stands. One that is not a ledger is kept, and the ledger
	// goes on in the next segment.
	entries, err := readSegment(ctx, w.c, w.blob, seg, &etag)
	if errors.Is(err, ErrCorrupt) {
		return w.keepNotALedger(ctx, segs, &notALedger{etag: etag, blobType: segs[len(segs)-1].blobType, err: err})
	}
	if err != nil {
		if storage.Changed(err) {
			return errRace
		}
		return err
	}
	w.seg, w.first, w.etag, w.blocks = seg, first, etag, len(entries)
	w.next = first
	if len(entries) > 0 {
		w.next = entries[len(entries)-1].Seq + 1
	}
	if sealed {
		// The last writer (maybe we) sealed it but had not opened the next
		// when we listed: open it ourselves, or read again if it appeared.
		return w.open(ctx, seg+1, w.next)
	}
	return nil
}

// claimLast reads the last segment's term under its ETag and decides from
// it (see catchUp): a fence, or a segment to make ours — stamped with our
// term if an older one holds it (claim), sealed if it is foreign. It
// returns the segment's ETag after any stamp, its first seq and whether it
// is sealed.
func (w *Writer) claimLast(ctx context.Context, segs []segment, mode catchUpMode) (azcore.ETag, int64, bool, error) {
	seg := segs[len(segs)-1].n
	client := w.c.NewAppendBlobClient(segmentName(w.blob, seg))
	props, err := client.GetProperties(storage.WithOp(ctx, "ledger_get"), nil)
	if err != nil {
		return "", 0, false, fmt.Errorf("ledger: read segment %d: %w", seg, err)
	}
	md := props.Metadata
	etag, first, sealed := *props.ETag, atoi(storage.MetadataValue(md, metaFirst)), storage.MetadataValue(md, metaSealed) == "true"
	holder := storage.MetadataValue(md, metaHolder)
	foreign := props.BlobType != nil && *props.BlobType != blob.BlobTypeAppendBlob
	t, _ := storage.Term(md) // a term that is not one reads as 0: ours stamps over it
	switch ours := holder == url.QueryEscape(w.holder); {
	case t > w.term:
		h, _ := url.QueryUnescape(holder)
		return "", 0, false, &TermAbove{Segment: seg, Term: t, Ours: w.term, Holder: h}
	case t == w.term && !ours:
		return "", 0, false, fmt.Errorf("%w: segment %d holds term %d (holder %q), we are term %d", ErrFenced, seg, t, holder, w.term)
	case t < w.term && mode == resume && foreign:
		return "", 0, false, fmt.Errorf("%w: segment %d was replaced by a %s outside the ledger, and a newer term's stamp may have gone with its metadata; a new term continues past it", ErrFenced, seg, *props.BlobType)
	case t < w.term && mode == resume:
		return "", 0, false, fmt.Errorf("%w: segment %d holds term %d (holder %q), we are term %d", ErrFenced, seg, t, holder, w.term)
	case foreign && !sealed:
		// 3'. A segment written outside the ledger: seal it under our term
		// and continue after its last entry.
		if etag, first, err = w.sealForeign(ctx, segs, client, etag, md); err != nil {
			return "", 0, false, err
		}
		if w.onForeign != nil {
			w.onForeign(seg, string(*props.BlobType))
		}
		return etag, first, true, nil
	case t < w.term:
		// 3. Stamp our term, conditioned on what we read (a segment kept as
		// not a ledger stays marked).
		md := w.meta(first, sealed)
		if segs[len(segs)-1].notALedger {
			md[metaNotALedger] = to("true")
		}
		resp, err := client.SetMetadata(storage.WithOp(ctx, "ledger_fence"), md,
			&blob.SetMetadataOptions{AccessConditions: storage.IfUnchanged(etag)})
		if err != nil {
			if storage.Changed(err) {
				return "", 0, false, errRace
			}
			return "", 0, false, fmt.Errorf("ledger: fence segment %d: %w", seg, err)
		}
		etag = *resp.ETag
	}
	return etag, first, sealed, nil
}

// sealForeign reads the last segment — one of another blob type, not yet
// sealed by us — as of etag, and stamps it sealed under our term,
// conditioned on the same ETag. Its first seq is its first entry's, else
// the one its metadata names, else the one after the previous segment's last
// entry. A segment that cannot be read is left as it is: ErrCorrupt.
func (w *Writer) sealForeign(ctx context.Context, segs []segment, client *appendblob.Client, etag azcore.ETag, md map[string]*string) (azcore.ETag, int64, error) {
	last := segs[len(segs)-1]
	entries, err := readSegment(ctx, w.c, w.blob, last.n, &etag)
	switch {
	case storage.Changed(err):
		return "", 0, errRace
	case errors.Is(err, ErrCorrupt):
		return "", 0, &notALedger{etag: etag, blobType: last.blobType, err: err}
	case err != nil:
		return "", 0, err
	}
	first := atoi(storage.MetadataValue(md, metaFirst))
	switch {
	case len(entries) > 0:
		first = entries[0].Seq
	case first == 0 && len(segs) > 1:
		prev, err := readSegment(ctx, w.c, w.blob, segs[len(segs)-2].n, nil)
		if err != nil {
			return "", 0, err
		}
		first = 1
		if len(prev) > 0 {
			first = prev[len(prev)-1].Seq + 1
		}
	case first == 0:
		first = 1
	}
	resp, err := client.SetMetadata(storage.WithOp(ctx, "ledger_fence"), w.meta(first, true),
		&blob.SetMetadataOptions{AccessConditions: storage.IfUnchanged(etag)})
	if err != nil {
		if storage.Changed(err) {
			return "", 0, errRace
		}
		return "", 0, fmt.Errorf("ledger: seal foreign segment %d: %w", last.n, err)
	}
	return *resp.ETag, first, nil
}

// notALedger: the last segment, read as of etag, holds lines that are not
// ledger entries.
type notALedger struct {
	etag     azcore.ETag
	blobType string
	err      error // the ErrCorrupt that says which line
}

func (e *notALedger) Error() string { return e.err.Error() }
func (e *notALedger) Unwrap() error { return e.err }

// keepNotALedger repairs a last segment that is not a ledger, as the writer
// that holds the ledger's term: it stamps the segment sealed and not a
// ledger under our term (conditioned on the ETag it was read at, so a
// write in between is not lost), leaves its content as found, reports it
// once, and opens the next segment after the last entry readable before it.
func (w *Writer) keepNotALedger(ctx context.Context, segs []segment, bad *notALedger) error {
	last := segs[len(segs)-1]
	first, err := nextAfter(ctx, w.c, w.blob, segs[:len(segs)-1])
	if err != nil {
		return err
	}
	md := w.meta(first, true)
	md[metaNotALedger] = to("true")
	client := w.c.NewAppendBlobClient(segmentName(w.blob, last.n))
	if _, err := client.SetMetadata(storage.WithOp(ctx, "ledger_fence"), md,
		&blob.SetMetadataOptions{AccessConditions: storage.IfUnchanged(bad.etag)}); err != nil {
		if storage.Changed(err) {
			return errRace
		}
		return fmt.Errorf("ledger: keep segment %d, which is not a ledger (%v): %w", last.n, bad.err, err)
	}
	if w.onNotALedger != nil {
		w.onNotALedger(last.n, bad.blobType)
	}
	w.next = first
	return w.open(ctx, last.n+1, first)
}

// nextAfter is the seq after the last entry of segs (in order), skipping
// segments kept as not a ledger; 1 when there is none.
func nextAfter(ctx context.Context, c *container.Client, name string, segs []segment) (int64, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].notALedger {
			continue
		}
		es, err := readSegment(ctx, c, name, segs[i].n, nil)
		if err != nil {
			return 0, err
		}
		if len(es) > 0 {
			return es[len(es)-1].Seq + 1, nil
		}
	}
	return 1, nil
}

// open is create where a segment n that exists already is a race
// (errRace: another writer, or a late request of ours, made it first; the
// caller reads again).
func (w *Writer) open(ctx context.Context, n int, first int64) error {
	if err := w.create(ctx, n, first); err != nil {
		if errors.Is(err, errExists) {
			return errRace
		}
		return err
	}
	return nil
}

// create makes segment n (first seq `first`) stamped with our term, only if
// it does not exist yet, and positions the writer at its start.
func (w *Writer) create(ctx context.Context, n int, first int64) error {
	create := func() (appendblob.CreateResponse, error) {
		return w.c.NewAppendBlobClient(segmentName(w.blob, n)).Create(storage.WithOp(ctx, "ledger_create"), &appendblob.CreateOptions{
			Metadata:         w.meta(first, false),
			AccessConditions: storage.IfUnchanged(""), // only while there is none
		})
	}
	resp, err := create()
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		if cerr := storage.EnsureContainer(ctx, w.c); cerr != nil {
			return fmt.Errorf("ledger: create container: %w", cerr)
		}
		resp, err = create()
	}
	if err != nil {
		if storage.Changed(err) {
			return fmt.Errorf("%w: segment %d already exists", errExists, n)
		}
		return fmt.Errorf("ledger: create segment %d: %w", n, err)
	}
	w.seg, w.first, w.blocks, w.etag = n, first, 0, *resp.ETag
	return nil
}

// Term is the writer's fencing term.
func (w *Writer) Term() int64 { return w.term }

// Append writes the next entry, stamped with the writer's term and the time.
// It returns ErrFenced once a newer term has taken the ledger; any other
// error leaves the outcome unknown and the next Append first re-reads where
// the ledger stands.
func (w *Writer) Append(ctx context.Context) (Entry, error) {
	// A refused conditional write (412) says the segment changed, not who
	// changed it: a newer term's stamp does, and so does a write of our own
	// that we gave up on and that landed late. Re-read; the term tells. Our
	// own late writes are few (one per failed call), so this ends; past a few
	// rounds, give up for this call and stay unsure.
	const rounds = 3
	for attempt := 1; ; attempt++ {
		e, err := w.append(ctx)
		if !errors.Is(err, errRace) {
			return e, err
		}
		w.unsure = true
		if attempt == rounds {
			return Entry{}, fmt.Errorf("ledger: the segment changed under us %d times while our term still held it: %w", rounds, err)
		}
	}
}

func (w *Writer) append(ctx context.Context) (Entry, error) {
	if w.unsure {
		if err := w.catchUp(ctx, resume); err != nil {
			if errors.Is(err, ErrFenced) {
				return Entry{}, err
			}
			return Entry{}, fmt.Errorf("ledger: resync: %w", err)
		}
		w.unsure = false
	}
	if w.blocks >= w.segmentLimit {
		if err := w.rotate(ctx); err != nil {
			return Entry{}, err
		}
	}
	e := Entry{Seq: w.next, Term: w.term, Holder: w.holder, At: time.Now().UTC()}
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	client := w.c.NewAppendBlobClient(segmentName(w.blob, w.seg))
	resp, err := client.AppendBlock(storage.WithOp(ctx, "ledger_append"), streaming.NopCloser(bytes.NewReader(line)),
		&appendblob.AppendBlockOptions{AccessConditions: storage.IfUnchanged(w.etag)})
	if err != nil {
		if storage.Changed(err) {
			return Entry{}, fmt.Errorf("%w: append of seq %d refused (412)", errRace, e.Seq)
		}
		w.unsure = true
		return Entry{}, fmt.Errorf("ledger: append seq %d: %w", e.Seq, err)
	}
	w.etag = *resp.ETag
	w.blocks++
	w.next++
	return e, nil
}

// rotate seals the full segment (conditioned on our ETag) and opens the next.
// Any failure leaves the writer unsure: the seal or the create may have
// landed, and the next Append re-reads before it writes.
func (w *Writer) rotate(ctx context.Context) error {
	client := w.c.NewAppendBlobClient(segmentName(w.blob, w.seg))
	resp, err := client.SetMetadata(storage.WithOp(ctx, "ledger_seal"), w.meta(w.first, true),
		&blob.SetMetadataOptions{AccessConditions: storage.IfUnchanged(w.etag)})
	if err != nil {
		w.unsure = true
		if storage.Changed(err) {
			return fmt.Errorf("%w: seal of segment %d refused (412)", errRace, w.seg)
		}
		return fmt.Errorf("ledger: seal segment %d: %w", w.seg, err)
	}
	// The seal changed the segment's ETag; keep it, or the next conditional
	// write on this segment would be refused by our own seal.
	w.etag = *resp.ETag
	if err := w.create(ctx, w.seg+1, w.next); err != nil {
		w.unsure = true
		if errors.Is(err, errExists) {
			return fmt.Errorf("%w: %v", errRace, err)
		}
		return err
	}
	return nil
}

// ReadAll reads the whole ledger of the election blob `blob`, in order. A
// ledger with no segment (a name never written, a missing container) is
// ErrNotFound, not an empty ledger: a reader that found nothing has checked
// nothing.
// Foreign segments (ListSegments) are read as found; segments a writer kept
// as not a ledger are skipped.
func ReadAll(ctx context.Context, c *container.Client, blob string) ([]Entry, error) {
	segs, err := segments(ctx, c, blob)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("%w: no segment under %s", ErrNotFound, Prefix(blob))
	}
	var all []Entry
	for _, s := range segs {
		if s.notALedger {
			continue // kept as found by the writer that went past it
		}
		es, err := readSegment(ctx, c, blob, s.n, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, es...)
	}
	return all, nil
}

// Verify checks a ledger read back: seq contiguous from 1, no duplicates,
// terms never decreasing, every entry with a holder.
func Verify(entries []Entry) error {
	for i, e := range entries {
		switch {
		case e.Seq != int64(i)+1:
			return fmt.Errorf("%w: entry %d has seq %d, want %d (gap or duplicate)", ErrCorrupt, i, e.Seq, i+1)
		case e.Holder == "":
			return fmt.Errorf("%w: seq %d has no holder", ErrCorrupt, e.Seq)
		case i > 0 && e.Term < entries[i-1].Term:
			return fmt.Errorf("%w: seq %d has term %d after term %d", ErrCorrupt, e.Seq, e.Term, entries[i-1].Term)
		}
	}
	return nil
}

// Segment is one segment of a ledger as storage lists it.
type Segment struct {
	Name     string // the blob's name
	BlobType string // "AppendBlob" for the ledger's own
	// NotALedger: a writer found lines in it that are not ledger entries,
	// kept it as found and continued in the next segment; readers skip it.
	NotALedger bool
}

// Foreign reports a segment of another blob type: written outside the
// ledger (e.g. re-uploaded as a block blob), so its lines were not fenced by
// the ledger's conditional appends; they are read as found.
func (s Segment) Foreign() bool { return s.BlobType != string(blob.BlobTypeAppendBlob) }

// ListSegments lists the segments of the ledger of the election blob `blob`,
// in order.
func ListSegments(ctx context.Context, c *container.Client, blob string) ([]Segment, error) {
	segs, err := segments(ctx, c, blob)
	out := make([]Segment, len(segs))
	for i, s := range segs {
		out[i] = Segment{Name: segmentName(blob, s.n), BlobType: s.blobType, NotALedger: s.notALedger}
	}
	return out, err
}

// segment is one listed segment: its number, blob type, and whether a
// writer kept it as not a ledger.
type segment struct {
	n          int
	blobType   string
	notALedger bool
}

func segments(ctx context.Context, c *container.Client, name string) ([]segment, error) {
	prefix := Prefix(name)
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}})
	var out []segment
	for pager.More() {
		page, err := pager.NextPage(storage.WithOp(ctx, "ledger_list"))
		if err != nil {
			if bloberror.HasCode(err, bloberror.ContainerNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("ledger: list segments: %w", err)
		}
		for _, b := range page.Segment.BlobItems {
			n, err := strconv.Atoi(strings.TrimPrefix(*b.Name, prefix))
			if err != nil || n < 1 {
				continue // not ours
			}
			s := segment{n: n, blobType: string(blob.BlobTypeAppendBlob), notALedger: storage.MetadataValue(b.Metadata, metaNotALedger) == "true"}
			if b.Properties != nil && b.Properties.BlobType != nil {
				s.blobType = string(*b.Properties.BlobType)
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	return out, nil
}

func readSegment(ctx context.Context, c *container.Client, name string, n int, etag *azcore.ETag) ([]Entry, error) {
	var opts *blob.DownloadStreamOptions
	if etag != nil {
		opts = &blob.DownloadStreamOptions{AccessConditions: storage.IfUnchanged(*etag)}
	}
	resp, err := c.NewAppendBlobClient(segmentName(name, n)).DownloadStream(storage.WithOp(ctx, "ledger_read"), opts)
	if err != nil {
		return nil, fmt.Errorf("ledger: read segment %d: %w", n, err)
	}
	defer resp.Body.Close()
	var out []Entry
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	for line := 1; sc.Scan(); line++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%w: segment %d line %d: %v", ErrCorrupt, n, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read segment %d: %w", n, err)
	}
	return out, nil
}

// meta is a segment's metadata as this writer stamps it.
func (w *Writer) meta(first int64, sealed bool) map[string]*string {
	t, f, s := strconv.FormatInt(w.term, 10), strconv.FormatInt(first, 10), strconv.FormatBool(sealed)
	h := url.QueryEscape(w.holder)
	return map[string]*string{storage.MetaTerm: &t, metaFirst: &f, metaSealed: &s, metaHolder: &h}
}

func to(s string) *string { return &s }

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
