package main

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/history"
)

// The node's history (--history): a JSON-lines file behind a bounded queue,
// or append blobs in the history container. History is evidence: a failed
// write is logged, never fatal, and it never waits: the sinks queue
// (bounded) and write from their own goroutine.

// openHistoryFile opens the --history file, when --history names one, before
// the worker listens or touches storage. A path the worker cannot append to
// is a configuration error (exit 2 naming the flag), not a runtime failure:
// the operator must fix the flag, and nothing has been written yet.
func openHistoryFile(path string) (*history.File, error) {
	if path == "" || path == "blob" {
		return nil, nil
	}
	f, err := history.OpenFile(path)
	if err != nil {
		if why := unusablePath(err); why != "" {
			return nil, usagef("invalid %s %q: %s; must be a writable file in an existing directory, or `blob`", flagRef("history"), path, why)
		}
		return nil, err
	}
	return f, nil
}

// unusablePath says why open failed when the path itself is the problem, and
// "" for other failures (too many open files, I/O errors).
func unusablePath(err error) string {
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "it is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "a parent is not a directory"
	case errors.Is(err, fs.ErrNotExist):
		return "its directory does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "not writable (permission denied)"
	case errors.Is(err, syscall.EROFS):
		return "on a read-only file system"
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		return "not a usable path (" + errors.Unwrap(err).Error() + ")"
	}
	return ""
}

// queueHistory makes f the node's history, written from a bounded queue.
func (n *node) queueHistory(f *history.File) {
	q := history.NewQueue(f, history.QueueOptions{Identity: n.o.identity, Start: processStart,
		OnError: func(err error) { n.log.Error("history write failed", "err", err) }})
	n.hist = q
	n.addSink(func() {
		// A file still blocked after the flush stays open: closing it
		// would wait on the very write that blocks.
		if n.flush("history", q.Close) {
			f.Close()
		}
	})
}

// appendHistoryBlobs makes append blobs in the history container the node's
// history (--history blob), on the node's credential.
func (n *node) appendHistoryBlobs() error {
	o := n.o
	hc, err := newContainerClient(storageOptions{connectionString: o.connectionString, accountURL: o.accountURL, container: history.Container},
		n.cred, time.Second, n.observeRequest)
	if err != nil {
		return usagef("invalid %s blob: %v", flagRef("history"), err)
	}
	b := history.OpenBlob(hc, o.identity, processStart, history.BlobOptions{Logger: n.log})
	n.hist = b
	n.addSink(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			n.log.Error("history", "err", err)
		}
	})
	return nil
}

// historyDropped counts the history records lost to a full queue or buffer.
func (n *node) historyDropped() uint64 {
	switch h := n.hist.(type) {
	case *history.Queue:
		return h.Dropped()
	case *history.Blob:
		return uint64(h.Dropped())
	}
	return 0
}

// write appends one record to the history, if there is one.
func (n *node) write(r history.Record) {
	if n.hist == nil {
		return
	}
	if err := n.hist.Write(r); err != nil {
		n.log.Error("history write failed", "err", err)
	}
}
