package shard

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/storage"
)

// ShardProgress is how far one shard's task has got under one term.
type ShardProgress struct {
	Shard int   `json:"shard"`
	Term  int64 `json:"term"` // the shard term the task wrote under
	Seq   int64 `json:"seq"`  // the last sequence it wrote (its fenced ledger's)
}

// Report is what a member tells the leader: the progress of the shards it
// works (followers report back; the leader aggregates).
type Report struct {
	Identity string          `json:"identity"`
	At       time.Time       `json:"at"`
	Shards   []ShardProgress `json:"shards"`
}

// ShardSummary is one shard in the leader's summary.
type ShardSummary struct {
	Shard    int    `json:"shard"`
	Owner    string `json:"owner"`    // the member holding its lease ("" when free)
	Term     int64  `json:"term"`     // the owner's shard term (from the shard blob)
	Progress int64  `json:"progress"` // the last ledger sequence reported for the shard (0: none yet)
	Standby  string `json:"standby"`  // from the assignment
}

// Summary is the leader's aggregate of the pool, published under its term.
type Summary struct {
	Term       int64          `json:"term"`       // the leader's election term
	Leader     string         `json:"leader"`     // its identity
	Version    int64          `json:"version"`    // of the assignment in force
	At         time.Time      `json:"at"`         // leader's wall clock
	Members    []string       `json:"members"`    // as counted by the assignment
	Shards     []ShardSummary `json:"shards"`     // by shard number
	ReportedBy []string       `json:"reportedBy"` // members whose reports it read
}

func (w *Worker) setProgress(s int, term, seq int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.progress[s]; !ok || term > p.Term || (term == p.Term && seq > p.Seq) {
		w.progress[s] = ShardProgress{Shard: s, Term: term, Seq: seq}
	}
}

// writeReport uploads our progress when it changed. Only this member writes
// its report, so the write is unconditional; a failed one waits for the next.
func (w *Worker) writeReport(ctx context.Context) {
	w.mu.Lock()
	r := Report{Identity: w.cfg.Election.Identity, Shards: make([]ShardProgress, 0, len(w.progress))}
	for _, p := range w.progress {
		r.Shards = append(r.Shards, p)
	}
	last := w.reported
	w.mu.Unlock()
	slices.SortFunc(r.Shards, func(a, b ShardProgress) int { return a.Shard - b.Shard })
	body, _ := json.Marshal(r.Shards)
	if len(r.Shards) == 0 || string(body) == last {
		return
	}
	r.At = time.Now().UTC()
	b, _ := json.Marshal(r)
	rctx, cancel := context.WithTimeout(ctx, w.cfg.Election.RequestTimeout())
	defer cancel()
	ct := "application/json"
	_, err := w.cfg.Container.NewBlockBlobClient(w.layout.Report(r.Identity)).UploadBuffer(storage.WithOp(rctx, "report_write"), b,
		&blockblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct}})
	if err != nil {
		w.log.Debug("progress report failed", "err", err)
		return
	}
	w.mu.Lock()
	w.reported = string(body)
	w.mu.Unlock()
}

// ReadSummary reads the summary the leader of the pool on lock blob `blob`
// last published, and the term it was published under. It returns nil when
// no leader has published one yet.
func ReadSummary(ctx context.Context, c *container.Client, blob string) (*Summary, error) {
	var sum Summary
	_, found, err := newFencedDoc(c, Layout{Blob: blob}.Summary(), "summary").read(ctx, &sum)
	if err != nil || !found {
		return nil, err
	}
	return &sum, nil
}
