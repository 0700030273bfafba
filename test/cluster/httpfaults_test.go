package cluster

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/blobleader/blobleader/chaos"
)

// Each worker's requests pass through its own HTTP proxy (behind its
// toxiproxy), so the request-level faults bind to the worker and act on its
// storage calls; the operator faults bind to the lock's blob and container.
func TestLocal_BindsTheRequestAndOperatorFaults(t *testing.T) {
	c, _ := fakeCluster(t, 2)
	l := c.WaitLeader(t, 20*time.Second)

	late := &chaos.LateDelivery{Op: chaos.OpRenew, Delay: 50, Count: 1}
	if err := c.Inject(ctxT(t, 5*time.Second), late, l); err != nil {
		t.Fatal(err)
	}
	if err := late.AwaitHeld(ctxT(t, 10*time.Second), 1); err != nil {
		t.Fatalf("the leader's renew never passed its HTTP proxy: %v", err)
	}
	ds, err := late.AwaitDelivered(ctxT(t, 5*time.Second), 1)
	if err != nil || ds[0].Status != http.StatusOK {
		t.Fatalf("held renew: %+v, %v; want it delivered and answered 200", ds, err)
	}
	if err := c.Inject(ctxT(t, 5*time.Second), &chaos.LostResponse{Op: chaos.OpAcquire}, nil); !errors.Is(err, chaos.ErrNoTarget) {
		t.Fatalf("lost response without a target = %v, want ErrNoTarget", err)
	}

	del := &chaos.DeleteContainer{}
	if err := c.Inject(ctxT(t, 5*time.Second), del, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Storage().NewBlobClient(c.LockBlob()).GetProperties(ctxT(t, 5*time.Second), nil); err == nil {
		// The stand-in may have recreated it already; the record still says it was deleted.
		t.Logf("lock blob back already: the workers recreated it")
	} else if !bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.BlobNotFound) {
		t.Fatal(err)
	}
	if err := c.Heal(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	fs := c.Faults()
	if len(fs) != 2 || fs[0].Kind != "late_delivery" || fs[0].Target != l.Identity() ||
		fs[1].Kind != "delete_container" || fs[1].Target != chaos.TargetAll || fs[0].End.IsZero() {
		t.Fatalf("timeline %+v; want late_delivery on %s then delete_container on *", fs, l.Identity())
	}
	if string(fs[0].Params) != `{"op":"renew","delay":50,"count":1}` {
		t.Fatalf("late_delivery params recorded as %s", fs[0].Params)
	}
}

// The negative control is a separate build: only the binary built with
// -tags negativecontrol takes --unsafe-no-step-down; the production binary
// refuses the flag and its env twin with exit 2 (issue 10, hole 4).
func TestWorkerBinaries_OnlyTheNegativeControlTakesTheUnsafeFlag(t *testing.T) {
	// run returns the exit code and the last line of output. The production
	// binary gets a complete configuration, so only the refusal can stop it
	// with exit 2 (and the deadline keeps a missing refusal from hanging).
	run := func(bin string, env []string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, lastLine(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), lastLine(out)
		}
		t.Fatalf("run %s: %v", bin, err)
		return -1, ""
	}
	unsafe := UnsafeWorkerBinary(t)
	prod := WorkerBinary(t)
	if got, out := run(unsafe, nil, "--unsafe-no-step-down", "--help"); got != 0 {
		t.Errorf("negative-control binary with --unsafe-no-step-down --help: exit %d, want 0: %s", got, out)
	}
	config := []string{"--connection-string=UseDevelopmentStorage=true", "--listen=127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--unsafe-no-step-down", nil, append([]string{"--unsafe-no-step-down"}, config...)},
		{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=true", []string{"BLOBLEADER_UNSAFE_NO_STEP_DOWN=true"}, config},
	} {
		got, out := run(prod, tc.env, tc.args...)
		if got != 2 || !strings.Contains(out, "unsafe-no-step-down") || !strings.Contains(out, "refused") {
			t.Errorf("production binary with %s: exit %d (%s), want 2 refusing the negative control", tc.name, got, out)
		}
	}
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
