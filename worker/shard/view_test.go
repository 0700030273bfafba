package shard

import (
	"errors"
	"testing"
	"time"
)

// A worker ignores an assignment from a term below the highest it has seen,
// however recent its version; within a term, versions order.
func TestView_IgnoresLowerTerms(t *testing.T) {
	now := time.Now()
	v := &view{identity: "w1", ttl: time.Minute, warmup: 0}
	steps := []struct {
		name    string
		a       *Assignment
		wantErr error
		want    [2]int64 // term, version in force afterwards
	}{
		{"first", &Assignment{Term: 5, Version: 3, Owners: []string{"w1"}}, nil, [2]int64{5, 3}},
		{"newer version, same term", &Assignment{Term: 5, Version: 4, Owners: []string{"w2"}}, nil, [2]int64{5, 4}},
		{"lower term, higher version", &Assignment{Term: 4, Version: 99, Owners: []string{"w1"}}, errOlderTerms, [2]int64{5, 4}},
		{"older version, same term", &Assignment{Term: 5, Version: 2, Owners: []string{"w1"}}, nil, [2]int64{5, 4}},
		{"higher term, lower version", &Assignment{Term: 6, Version: 1, Owners: []string{"w1"}}, nil, [2]int64{6, 1}},
	}
	for _, st := range steps {
		err := v.adopt(st.a, "etag", now)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: adopt returned %v, expected %v", st.name, err, st.wantErr)
		}
		a, fresh := v.current(now)
		if !fresh || a.Term != st.want[0] || a.Version != st.want[1] {
			t.Fatalf("%s: in force term %d version %d (fresh %v), expected term %d version %d", st.name, a.Term, a.Version, fresh, st.want[0], st.want[1])
		}
	}
	// The gate follows the assignment in force (term 6 gives shard 0 to w1),
	// and refuses once the view is stale.
	if err := v.mayAcquire(0, now); err != nil {
		t.Fatalf("expected w1 to be allowed shard 0, got %v", err)
	}
	if err := v.mayAcquire(0, now.Add(2*time.Minute)); !errors.Is(err, errStale) {
		t.Fatalf("expected a stale view to refuse, got %v", err)
	}
}

// A standby acts at once on its first view (a process that just started
// has no stale belief to recover from: in a rolling restart the restarted
// member must be able to take over the next leaver's shards), but waits
// standbyWarmup after its view went stale (an outage or a partition), so
// the owners win their shards back first.
func TestView_StandbyWarmsUpOnlyAfterAStaleView(t *testing.T) {
	t0 := time.Now()
	v := &view{identity: "w2", ttl: 5 * time.Second, warmup: 15 * time.Second}
	a := &Assignment{Term: 1, Version: 1, Owners: []string{"w1"}, Standbys: []string{"w2"}}
	if err := v.adopt(a, "e1", t0); err != nil {
		t.Fatal(err)
	}
	if err := v.mayAcquire(0, t0.Add(time.Second)); err != nil {
		t.Fatalf("expected the standby to be allowed on its first fresh view, got %v", err)
	}
	// 20 s without a successful read: stale. The next read starts a warm-up.
	v.touch(t0.Add(20 * time.Second))
	if err := v.mayAcquire(0, t0.Add(21*time.Second)); !errors.Is(err, errWarmingUp) {
		t.Fatalf("expected the standby to warm up after a stale view, got %v", err)
	}
	for sec := 22; sec <= 36; sec += 2 { // fresh again, read every 2 s
		v.touch(t0.Add(time.Duration(sec) * time.Second))
	}
	if err := v.mayAcquire(0, t0.Add(36*time.Second)); err != nil {
		t.Fatalf("expected the standby allowed once warm (%v after the view was fresh again), got %v", 16*time.Second, err)
	}
}
