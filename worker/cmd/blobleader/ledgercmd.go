package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/ledger"
	"github.com/blobleader/blobleader/worker/shard"
)

// runLedger prints the ledgers of --blob — the election's, and each shard's
// of a --shards pool on that blob — and with --verify checks each: seq
// contiguous from 1, no duplicates, terms never decreasing. Exit 1 if one
// breaks a rule, or if there is nothing to read. A verified ledger with
// segments written outside it (another blob type) says so, one line each:
// their lines are as found, not fenced.
func runLedger(args []string, stdout, _ io.Writer) error {
	o, err := parseLedgerOptions(args, stdout)
	if err != nil {
		return err
	}
	return o.onStorage(func(ctx context.Context, c *container.Client) error {
		books, err := readBooks(ctx, c, o.storage.container, o.storage.blob)
		if err != nil {
			return err
		}
		if err := printBooks(stdout, books, o.asJSON); err != nil {
			return err
		}
		if o.verify {
			return verifyBooks(stdout, books)
		}
		return nil
	})
}

// book is one ledger: the election's (shard -1) or a pool shard's.
type book struct {
	shard   int
	name    string // its base name (package ledger's blob)
	entries []ledger.Entry
	foreign []ledger.Segment // its segments written outside it (ledger.Segment.Foreign, NotALedger)
}

func (b book) what() string {
	if b.shard < 0 {
		return "the election's ledger"
	}
	return fmt.Sprintf("shard %d", b.shard)
}

// readBooks reads the election's ledger of blob and every shard ledger of a
// pool on blob; none at all is an error saying where it looked.
func readBooks(ctx context.Context, c *container.Client, containerName, blob string) ([]book, error) {
	var books []book
	es, err := ledger.ReadAll(ctx, c, blob)
	switch {
	case err == nil:
		books = append(books, book{shard: -1, name: blob, entries: es})
	case !errors.Is(err, ledger.ErrNotFound):
		return nil, err
	}
	shards, err := shard.LedgerShards(ctx, c, blob)
	if err != nil {
		return nil, err
	}
	for _, n := range shards {
		name := shard.Layout{Blob: blob}.Ledger(n)
		es, err := ledger.ReadAll(ctx, c, name)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", n, err)
		}
		books = append(books, book{shard: n, name: name, entries: es})
	}
	for i := range books {
		segs, err := ledger.ListSegments(ctx, c, books[i].name)
		if err != nil {
			return nil, err
		}
		for _, s := range segs {
			if s.Foreign() || s.NotALedger {
				books[i].foreign = append(books[i].foreign, s)
			}
		}
	}
	if len(books) > 0 {
		return books, nil
	}
	if _, err := c.GetProperties(ctx, nil); bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return nil, fmt.Errorf("no ledger: container %q does not exist (check --container)", containerName)
	}
	return nil, fmt.Errorf("no ledger: no segment under %s/%s and no shard ledger under %s/%s-shard-ledgers/ (check --blob and --container)",
		containerName, ledger.Prefix(blob), containerName, blob)
}

func printBooks(w io.Writer, books []book, asJSON bool) error {
	pool := len(books) > 1 || books[0].shard >= 0
	if asJSON {
		enc := json.NewEncoder(w)
		for _, b := range books {
			for _, e := range b.entries {
				var v any = e
				if b.shard >= 0 {
					v = struct {
						Shard int `json:"shard"`
						ledger.Entry
					}{b.shard, e}
				}
				if err := enc.Encode(v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	termWidth := len("TERM")
	for _, b := range books {
		for _, e := range b.entries {
			termWidth = max(termWidth, len(strconv.FormatInt(e.Term, 10)))
		}
	}
	shardCol := func(string) string { return "" }
	if pool {
		shardCol = func(s string) string { return fmt.Sprintf("%5s  ", s) }
	}
	fmt.Fprintf(w, "%s%8s  %*s  %-30s %s\n", shardCol("SHARD"), "SEQ", termWidth, "TERM", "HOLDER", "AT")
	for _, b := range books {
		s := "-"
		if b.shard >= 0 {
			s = strconv.Itoa(b.shard)
		}
		for _, e := range b.entries {
			fmt.Fprintf(w, "%s%8d  %*d  %-30s %s\n", shardCol(s), e.Seq, termWidth, e.Term, e.Holder, e.At.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// verifyBooks checks each ledger on its own and prints the verdict; a
// ledger that breaks a rule, or no entry at all, is an error.
func verifyBooks(w io.Writer, books []book) error {
	total := 0
	for _, b := range books {
		if err := ledger.Verify(b.entries); err != nil {
			return fmt.Errorf("%s (%s): %w", b.what(), ledger.Prefix(b.name), err)
		}
		total += len(b.entries)
	}
	if total == 0 {
		names := make([]string, len(books))
		for i, b := range books {
			names[i] = ledger.Prefix(b.name)
		}
		return fmt.Errorf("nothing to verify: no entry in %s", strings.Join(names, ", "))
	}
	defer noteForeign(w, books)
	if len(books) == 1 && books[0].shard < 0 {
		es := books[0].entries
		fmt.Fprintf(w, "verified: %s, %s, no gaps or duplicates, terms never decrease\n", plural(len(es), "entry", "entries"), plural(terms(es), "term", "terms"))
		return nil
	}
	shards := 0
	for _, b := range books {
		fmt.Fprintf(w, "%s: verified %s, %s\n", b.what(), plural(len(b.entries), "entry", "entries"), plural(terms(b.entries), "term", "terms"))
		if b.shard >= 0 {
			shards++
		}
	}
	what := plural(shards, "shard ledger", "shard ledgers")
	if shards < len(books) {
		what = "the election's ledger and " + what
	}
	fmt.Fprintf(w, "verified: %s, %s, no gaps or duplicates, terms never decrease\n", what, plural(total, "entry", "entries"))
	return nil
}

// noteForeign prints, after the verdict, one line per segment written
// outside its ledger: the check holds, but those lines were not fenced (or,
// for a segment that is not a ledger, not read at all).
func noteForeign(w io.Writer, books []book) {
	for _, b := range books {
		for _, s := range b.foreign {
			if s.NotALedger {
				fmt.Fprintf(w, "note: segment %s is not a ledger (lines that are not entries, a %s written outside it): kept as found and skipped; the ledger continues after it\n", s.Name, s.BlobType)
				continue
			}
			fmt.Fprintf(w, "note: segment %s is a %s, written outside the ledger (re-uploaded?): its lines are as found, not fenced by the ledger's appends\n", s.Name, s.BlobType)
		}
	}
}

// terms counts the distinct terms of es.
func terms(es []ledger.Entry) int {
	seen := map[int64]bool{}
	for _, e := range es {
		seen[e.Term] = true
	}
	return len(seen)
}

// plural is "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
