package bloblock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// Metadata keys of the early-takeover contract (lease.Record): the
// holder's heartbeat counter, how often it beats and how long after the
// send of a write of its record that landed it has stopped, in
// milliseconds. (The previous design published stop_within_ms, counted
// from a renew's send; a record carrying only that key has no contract
// here and is never broken early.)
const (
	metaHeartbeat      = "heartbeat"
	metaBeatEvery      = "heartbeat_every_ms"
	metaStopAfterWrite = "stop_after_write_ms"
)

var _ lease.Breaker = (*Lock)(nil)

// Inspect reads the lease state and the record with one Get Blob
// Properties ("poll"), with the blob's ETag as the view's Version. No blob
// (or no container) reads as available, with the term floor. A record whose
// term is unusable comes back with State and Version and an error wrapping
// lease.ErrUnusableRecord.
func (l *Lock) Inspect(ctx context.Context) (lease.View, error) {
	props, err := l.blob.GetProperties(storage.WithOp(ctx, "poll"), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return lease.View{State: lease.Available, Record: lease.Record{Term: l.termFloor()}}, nil
	}
	if err != nil {
		return lease.View{}, classify("poll", err, plainCall)
	}
	v := lease.View{State: lease.Available}
	if props.LeaseState != nil {
		v.State = lease.State(*props.LeaseState)
	}
	if props.ETag != nil {
		v.Version = string(*props.ETag)
	}
	v.Record, err = l.record(props.Metadata)
	if err == nil && v.Record.Term == 0 {
		v.Record.Term = l.termFloor()
	}
	return v, err
}

// Break is the one way to break the blob's lease. It ends the lease after
// period (whole seconds, 0–60; storage uses the lease's remaining time
// instead when that is shorter), and nobody can acquire before that. With
// period 0 the lease is broken at once: storage then refuses the holder's
// renew (409) and its lease-guarded writes (412), and any lease ID can
// acquire (Azure's Lease Blob state tables; TestLock_BreakNowEndsTheLease…).
//
// version conditions it (If-Match): the ETag of the read that judged the
// leadership (lease.View.Version). Every write of the record —
// a heartbeat, a later leadership's term — changes the ETag, so a break
// decided on an older read and delivered late is refused (412
// ConditionNotMet) and the lease stays. The empty version breaks whatever
// lease holds the blob: an operator's forced break (recover-term, tests),
// never the elector's.
func (l *Lock) Break(ctx context.Context, version string, period time.Duration) error {
	if period < 0 || period > lease.MaxBreakPeriod || period%time.Second != 0 {
		return fmt.Errorf("bloblock: break period %s: must be whole seconds between 0 and %s", period, lease.MaxBreakPeriod)
	}
	lc, err := azlease.NewBlobClient(l.blob, nil)
	if err != nil {
		return err
	}
	secs := int32(period / time.Second)
	opts := &azlease.BlobBreakOptions{BreakPeriod: &secs}
	if version != "" {
		opts.ModifiedAccessConditions = storage.IfUnchanged(azcore.ETag(version)).ModifiedAccessConditions
	}
	_, err = lc.BreakLease(storage.WithOp(ctx, "break"), opts)
	return classify("break", err, plainCall)
}

// takeoverMetadata adds the contract's keys for a record that carries one.
func takeoverMetadata(md map[string]*string, r lease.Record) {
	if r.BeatEvery <= 0 {
		return // no contract: early takeover off on the writer
	}
	for k, v := range map[string]int64{
		metaHeartbeat: r.Heartbeat, metaBeatEvery: r.BeatEvery.Milliseconds(), metaStopAfterWrite: r.StopAfterWrite.Milliseconds(),
	} {
		s := strconv.FormatInt(v, 10)
		md[k] = &s
	}
}

// parseTakeover reads one of the contract's keys into r; ok is false for a
// key that is not one of them. A malformed value reads as no contract:
// followers then never break this holder early.
func parseTakeover(r *lease.Record, key, v string) (ok bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		n = 0
	}
	switch key {
	case metaHeartbeat:
		r.Heartbeat = n
	case metaBeatEvery:
		r.BeatEvery = time.Duration(n) * time.Millisecond
	case metaStopAfterWrite:
		r.StopAfterWrite = time.Duration(n) * time.Millisecond
	default:
		return false
	}
	return true
}
