package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/shard"
	"github.com/blobleader/blobleader/worker/status"
)

// --shards N: the Leader-Followers mode (docs/architecture.md, "Shards").
// The elected leader's task coordinates the pool (membership, a balanced
// sticky assignment published under its term, the summary); every worker,
// the leader included, works the shards it holds the leases of, each with
// the reference task on the shard's own fenced ledger.

// shardMode is the worker's side of a shard pool.
type shardMode struct {
	w   *shard.Worker
	log *slog.Logger
	cfg election.Config
}

// newShardMode builds the pool member on n, and its metrics.
func newShardMode(o *workerOptions, n *node) (*shardMode, error) {
	c, cfg, log, repaired := n.storage, n.cfg, n.log, n.metrics.Repaired
	layout := shard.Layout{Blob: o.blob}
	task := func(ctx context.Context, n int, term int64) error {
		t := &ledgerTask{c: c, blob: layout.Ledger(n), identity: o.identity, lock: layout.Shard(n), container: o.container, tick: o.tick,
			onRepair: repaired, requestTimeout: cfg.RequestTimeout(), log: log.With("shard", n),
			onAppend: func(seq int64) { shard.ReportProgress(ctx, seq) }}
		return o.build.task(t.run, o.tick)(ctx, term)
	}
	w, err := shard.New(shard.Config{
		Shards: o.shards, Election: cfg, Container: c, Blob: o.blob, Task: task,
		OnEvent:  func(ev shard.Event) { n.write(shardRecord(o.identity, ev)) },
		OnRepair: n.metrics.Repaired,
	})
	if err != nil {
		return nil, usagef("%v", err)
	}
	m := &shardMode{w: w, log: log, cfg: cfg}
	n.metrics.Registry.MustRegister(status.NewShardOwnership(w.Owned), status.NewShardsUnowned(m.unowned))
	n.metrics.AlsoUnusable(w.Unusable)
	return m, nil
}

// shardRecord turns a shard event into a history record: shard events carry
// the shard and its own term; assignment_published the leader's term.
func shardRecord(identity string, ev shard.Event) history.Record {
	r := history.Record{
		T: ev.Time.UTC().Format(time.RFC3339Nano), MonoNS: int64(ev.Time.Sub(processStart)),
		Identity: identity, Event: string(ev.Kind), Term: ev.Term, Reason: ev.Reason,
	}
	if ev.Shard >= 0 {
		s := ev.Shard
		r.Shard = &s
	}
	if !ev.ValidUntil.IsZero() {
		r.ValidUntil = ev.ValidUntil.UTC().Format(time.RFC3339Nano)
	}
	return r
}

// lead is the election's leader task in shard mode: coordinate the pool,
// publishing nothing once the leadership behind ctx has lapsed.
func (m *shardMode) lead(ctx context.Context, term int64) error {
	return m.w.Lead(ctx, term, func() bool { return election.Leading(ctx) })
}

// run works this member's shards beside the election, and while it
// coordinates the pool writes the shards log line the alerts read
// (alertlog.go).
func (m *shardMode) run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.logShards(ctx)
	}()
	err := m.w.Run(ctx)
	<-done
	return err
}

// unowned is blobleader_shards_unowned's reading: the coordinator's count of
// assigned shards with no lease held, and whether this worker coordinates.
func (m *shardMode) unowned() (int, bool) {
	n, _, ok := m.w.Unowned()
	return n, ok
}

// healthy is the pool member's part of /healthz: its shard tasks' health.
func (m *shardMode) healthy() error { return m.w.Healthy() }

// ready is the pool member's part of /readyz: unusable shard locks and
// conflicting set-ups, which a restart does not cure.
func (m *shardMode) ready() error { return m.w.Ready() }

// conflict is the pool member's part of blobleader_setup_conflict.
func (m *shardMode) conflict() string { return m.w.Conflict() }

// shardStatus is /status in shard mode: the contract's document plus the
// shards this worker owns and, on the leader, the assignment in force.
type shardStatus struct {
	status.Document
	Shards     []int             `json:"shards"`
	Assignment *shard.Assignment `json:"assignment,omitempty"`
}

// handler serves /status with the shard fields and folds the pool member's
// health into /healthz and its readiness into /readyz; everything else is
// base's.
func (m *shardMode) handler(e *election.Elector, base http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", base)
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		doc := shardStatus{Document: status.NewDocument(e), Shards: m.w.Owned()}
		doc.Unusable = joinReasons(doc.Unusable, m.w.Unusable())
		if e.IsLeader() {
			doc.Assignment = m.w.Assignment()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		answerProbe(w, errors.Join(e.Healthy(), m.w.Healthy()))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		answerProbe(w, errors.Join(e.Ready(), m.w.Ready()))
	})
	return mux
}

// joinReasons joins the non-empty reasons with "; ".
func joinReasons(reasons ...string) string {
	var out []string
	for _, r := range reasons {
		if r != "" {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}
