package chaos

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"
)

type opLog struct {
	mu  sync.Mutex
	ops []ARMOp
}

func (l *opLog) add(op ARMOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

// A real run must show what ACI and ARM actually do: every ARM operation of
// a fault is reported with how long it took until its effect was seen (the
// group Stopped or Running again, the network rule applied at the front end).
func TestOffline_AzureFaultsReportEachARMOperation(t *testing.T) {
	aci := newFakeACI("ci-w-01")
	log := &opLog{}
	g := group(aci.client(t), "ci-w-01")
	g.OnOp = log.add
	crash := &AzureCrash{Restart: true, Group: g}
	ctx := testCtx(t, 10*time.Second)
	before := time.Now()
	if err := crash.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := crash.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	acct := &fakeAccount{rules: armstorage.NetworkRuleSet{DefaultAction: to(armstorage.DefaultActionAllow)}}
	reachable := true
	out := &AzureOutage{Accounts: acct.client(t), ResourceGroup: "rg-test", Account: "sttest", ProbeEvery: time.Millisecond, OnOp: log.add,
		Probe: func(context.Context) (bool, error) { reachable = !reachable; return reachable, nil }}
	if err := out.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := out.Remove(ctx); err != nil {
		t.Fatal(err)
	}

	want := []struct{ op, target string }{{"stop", "ci-w-01"}, {"start", "ci-w-01"}, {"deny", "sttest"}, {"allow", "sttest"}}
	if len(log.ops) != len(want) {
		t.Fatalf("reported %+v, want %v", log.ops, want)
	}
	for i, w := range want {
		op := log.ops[i]
		if op.Op != w.op || op.Target != w.target || op.Err != "" || op.Took <= 0 || op.Start.Before(before) {
			t.Errorf("op %d = %+v, want %s on %s with a duration and no error", i, op, w.op, w.target)
		}
	}
	// A failed operation is reported too, with its error.
	log.ops = nil
	missing := group(newFakeACI().client(t), "missing")
	missing.OnOp = log.add
	if err := (&AzureCrash{Group: missing}).Inject(ctx); err == nil {
		t.Fatal("crash of a missing group succeeded")
	}
	if len(log.ops) != 1 || log.ops[0].Op != "stop" || log.ops[0].Err == "" {
		t.Fatalf("reported %+v, want the failed stop with its error", log.ops)
	}
}
