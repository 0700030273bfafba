package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout names the blobs of one shard pool. Everything the leader reads in
// one pass lives under Pool(), so a single List Blobs call (with metadata)
// shows every member's lease, every shard's lease and holder, and the
// published documents:
//
//	<blob>-shards/members/<identity>   a member's presence: its lease is the liveness
//	<blob>-shards/shards/<nnnn>        shard n's lock (holder and term in metadata)
//	<blob>-shards/reports/<identity>   a member's progress report (JSON)
//	<blob>-shards/assignment           the leader's assignment (JSON, fenced)
//	<blob>-shards/summary              the leader's summary (JSON, fenced)
//
// Shard n's fenced ledger lives outside the pool, at
// <blob>-shard-ledgers/<nnnn>-ledger/<segment> (package ledger's layout for
// the base name <blob>-shard-ledgers/<nnnn>), so listing the pool never
// pages through ledger segments.
type Layout struct {
	// Blob is the election's lock blob name, e.g. "leader".
	Blob string
}

// Pool is the prefix of every pool blob.
func (l Layout) Pool() string { return l.Blob + "-shards/" }

func (l Layout) membersPrefix() string { return l.Pool() + "members/" }
func (l Layout) shardsPrefix() string  { return l.Pool() + "shards/" }
func (l Layout) reportsPrefix() string { return l.Pool() + "reports/" }

// Member is the blob whose lease shows identity is live.
func (l Layout) Member(identity string) string { return l.membersPrefix() + identity }

// Shard is shard n's lock blob.
func (l Layout) Shard(n int) string { return fmt.Sprintf("%s%04d", l.shardsPrefix(), n) }

// Report is identity's progress report.
func (l Layout) Report(identity string) string { return l.reportsPrefix() + identity }

// Assignment is the leader's published assignment.
func (l Layout) Assignment() string { return l.Pool() + "assignment" }

// Summary is the leader's published summary.
func (l Layout) Summary() string { return l.Pool() + "summary" }

// Ledger is the base name (package ledger's `blob`) of shard n's ledger.
func (l Layout) Ledger(n int) string { return fmt.Sprintf("%s-shard-ledgers/%04d", l.Blob, n) }

// kind classifies a pool blob name: "member", "shard", "report",
// "assignment", "summary" or "" (not ours), with the identity or shard
// number it names.
func (l Layout) kind(name string) (kind, identity string, shard int) {
	switch {
	case strings.HasPrefix(name, l.membersPrefix()):
		return "member", strings.TrimPrefix(name, l.membersPrefix()), -1
	case strings.HasPrefix(name, l.reportsPrefix()):
		return "report", strings.TrimPrefix(name, l.reportsPrefix()), -1
	case strings.HasPrefix(name, l.shardsPrefix()):
		n, err := strconv.Atoi(strings.TrimPrefix(name, l.shardsPrefix()))
		if err != nil || n < 0 {
			return "", "", -1
		}
		return "shard", "", n
	case name == l.Assignment():
		return "assignment", "", -1
	case name == l.Summary():
		return "summary", "", -1
	}
	return "", "", -1
}
