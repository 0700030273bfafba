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
