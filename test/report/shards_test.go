package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// The shard timeline has a lane per shard with a bar per owner, and is
// well-formed XML.
func TestWriteShardSVG_LanePerShardBarPerOwner(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	shard := func(n int) *int { return &n }
	evs := []checker.Event{
		{T: at(0), Identity: "w1", Event: checker.EventMemberJoined},
		{T: at(0.2), Identity: "w2", Event: checker.EventMemberJoined},
		{T: at(1), Identity: "w1", Event: checker.EventShardAcquired, Term: 10, Shard: shard(0), ValidUntil: at(11)},
		{T: at(1), Identity: "w2", Event: checker.EventShardAcquired, Term: 20, Shard: shard(1), ValidUntil: at(11)},
		{T: at(9), Identity: "w1", Event: checker.EventShardRenewed, Term: 10, Shard: shard(0), ValidUntil: at(19)},
		{T: at(9), Identity: "w2", Event: checker.EventShardRenewed, Term: 20, Shard: shard(1), ValidUntil: at(19)},
	}
	run := checker.ShardRun{Run: checker.Run{Events: evs, Faults: []checker.Fault{{Kind: checker.FaultCrash, Target: "w2", Start: at(5)}}, Start: at(0), End: at(10)}, Shards: 2}
	res, err := checker.CheckShards(run, checker.ShardParams{Params: checker.DefaultParams(), Settle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteShardSVG(&b, run, res); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{">shard 0<", ">shard 1<", "shard 0: w1, term 10", "shard 1: w2, term 20", "fault crash on w2"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the shard timeline lacks %q", want)
		}
	}
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the shard timeline is not well-formed XML: %v", err)
		}
	}
}
