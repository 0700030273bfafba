package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// Each worker's proxy record is dumped as JSONL, one file per slot, holding
// the requests the worker sent to storage (its acquire among them).
func TestLocal_WriteRequestLogsDumpsEachWorkersRequests(t *testing.T) {
	c, _ := fakeCluster(t, 2)
	c.WaitLeader(t, 30*time.Second)
	dir := t.TempDir()
	if err := c.WriteRequestLogs(dir); err != nil {
		t.Fatal(err)
	}
	for _, slot := range []string{"w1", "w2"} {
		f, err := os.Open(filepath.Join(dir, slot+"-requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		acquires, lines := 0, 0
		for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
			var r chaos.RequestRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s line %d %q: %v", slot, lines+1, sc.Text(), err)
			}
			if r.Proxy != slot {
				t.Fatalf("%s line %d names proxy %q", slot, lines+1, r.Proxy)
			}
			if r.Op == chaos.OpAcquire && !r.Answered.IsZero() {
				acquires++
			}
		}
		f.Close()
		if acquires == 0 {
			t.Errorf("%s: %d records, no answered acquire", slot, lines)
		}
	}
}
