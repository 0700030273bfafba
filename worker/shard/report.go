package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// ShardProgress is how far one shard's task has got under one term.
type ShardProgress struct {
	Shard int   `json:"shard"`
	Term  int64 `json:"term"` // the shard term the task wrote under
	Seq   int64 `json:"seq"`  // the last sequence it wrote (its fenced ledger's)
}

// Report is what a member tells the leader: the progress of the shards it
// works (followers report back; the leader aggregates), and the newest
// assignment it has seen, so that a leader that finds the assignment gone
// numbers its next one above it.
type Report struct {
	Identity   string          `json:"identity"`
	At         time.Time       `json:"at"`
	Shards     []ShardProgress `json:"shards"`
	Assignment *AssignmentRef  `json:"assignment,omitempty"`
}

// AssignmentRef names one assignment by its order: term, then version.
type AssignmentRef struct {
	Term    int64 `json:"term"`
	Version int64 `json:"version"`
}

// validate checks a report read from storage: a shard number out of range
// is left to the reader (a pool of another N), a negative one is not a report.
func (r *Report) validate() error {
	for _, p := range r.Shards {
		if p.Shard < 0 || p.Seq < 0 {
			return fmt.Errorf("shard %d seq %d", p.Shard, p.Seq)
		}
	}
	if r.Assignment != nil && (r.Assignment.Term < 0 || r.Assignment.Version < 0 || r.Assignment.Version > lease.MaxTerm) {
		return fmt.Errorf("assignment term %d version %d", r.Assignment.Term, r.Assignment.Version)
	}
	return nil
}

// ShardSummary is one shard in the leader's summary.
type ShardSummary struct {
	Shard    int    `json:"shard"`
	Owner    string `json:"owner"`    // the member holding its lease ("" when free)
	Term     int64  `json:"term"`     // the owner's shard term (from the shard blob)
	Progress int64  `json:"progress"` // the last ledger sequence reported for the shard (0: none yet)
	Standby  string `json:"standby"`  // from the assignment
}

// validate checks a summary read from storage.
func (s *Summary) validate() error {
	if s.Term <= 0 {
		return fmt.Errorf("term %d is not positive", s.Term)
	}
	for i, sh := range s.Shards {
		if sh.Shard != i {
			return fmt.Errorf("entry %d is shard %d", i, sh.Shard)
		}
	}
	return nil
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

// writeReport uploads our progress and the newest assignment we have seen,
// when either changed. Only this member writes its report, so the write is
// unconditional; a failed one waits for the next.
func (w *Worker) writeReport(ctx context.Context) {
	w.mu.Lock()
	r := Report{Identity: w.cfg.Election.Identity, Shards: make([]ShardProgress, 0, len(w.progress))}
	for _, p := range w.progress {
		r.Shards = append(r.Shards, p)
	}
	last := w.reported
	w.mu.Unlock()
	if a, _ := w.view.current(time.Now()); a != nil {
		r.Assignment = &AssignmentRef{Term: a.Term, Version: a.Version}
	}
	slices.SortFunc(r.Shards, func(a, b ShardProgress) int { return a.Shard - b.Shard })
	body, _ := json.Marshal([]any{r.Shards, r.Assignment})
	if (len(r.Shards) == 0 && r.Assignment == nil) || string(body) == last {
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
