package ledger_test

import (
	"errors"
	"testing"

	"github.com/blobleader/blobleader/worker/ledger"
)

// A transient failure must never make a writer fence itself: ErrFenced ends
// the leader task, and the leader hands leadership on for nothing. These
// tests inject one failure (see faults_test.go) into the real storage
// conversation and check that the writer carries on — and that a newer term
// still fences it afterwards.

// Open stamps our term into the segment and then reads it; if anything after
// the stamp fails, the task retries Open, which then finds our own term.
func TestLedger_OpenRetriedAfterAFailureBehindItsStampIsNotFenced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		op     string
		mode   faultMode
		sealed bool // the segment Open finds is sealed, so Open creates the next
	}{
		{"read after the stamp fails", "ledger_read", failBeforeSend, false},
		{"stamp applied, answer lost", "ledger_fence", loseResponse, false},
		{"next segment after a seal never created", "ledger_create", failBeforeSend, true},
		{"next segment after a seal created, answer lost", "ledger_create", loseResponse, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFaultyContainer(t)
			opts := ledger.Options{SegmentLimit: 2}
			w1, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, w1, 2) // segment 1 is full
			if tt.sealed {
				// Leave segment 1 sealed with no successor: w1's rotation
				// seals it and fails to open segment 2.
				f.Arm("ledger_create", 1, failBeforeSend)
				if _, err := w1.Append(ctxT(t)); err == nil || errors.Is(err, ledger.ErrFenced) {
					t.Fatalf("rotation with a failed create: Append = %v, want a transient error", err)
				}
			}

			f.Arm(tt.op, 1, tt.mode)
			if _, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts); err == nil {
				t.Fatalf("Open succeeded: the fault (%s on %s) did not hit; injected: %v", tt.mode, tt.op, f.Hits())
			}
			// The task retries on its next tick.
			w2, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts)
			if err != nil {
				t.Fatalf("Open retried after %s on %s = %v; want our own stamp recognised, not a fence", tt.mode, tt.op, err)
			}
			appendN(t, w2, 3)
			es := readVerified(t, c)
			if len(es) != 5 || es[4].Term != 2 || es[2].Seq != 3 || es[2].Term != 2 {
				t.Fatalf("ledger = %+v, want seq 1–2 of term 1, seq 3–5 of term 2", es)
			}
			if _, err := w1.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("the deposed writer's Append = %v, want ErrFenced", err)
			}
		})
	}
}

// A write whose outcome is unknown leaves the writer unsure; the next Append
// re-reads where the ledger stands and goes on. That holds for every write,
// rotation included.
func TestLedger_TransientFailureOfAWriteIsNotAFence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		op   string
		mode faultMode
	}{
		{"seal never sent", "ledger_seal", failBeforeSend},
		{"seal applied, answer lost", "ledger_seal", loseResponse},
		{"next segment never created", "ledger_create", failBeforeSend},
		{"next segment created, answer lost", "ledger_create", loseResponse},
		{"append never sent", "ledger_append", failBeforeSend},
		{"append applied, answer lost", "ledger_append", loseResponse},
		{"append delivered after the writer re-read the segment", "ledger_append", deliverLate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFaultyContainer(t)
			opts := ledger.Options{SegmentLimit: 2}
			w, err := ledger.Open(ctxT(t), c, "leader", 1, "a", opts)
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, w, 2) // segment 1 is full: the next Append rotates
			f.Arm(tt.op, 1, tt.mode)
			_, err = w.Append(ctxT(t))
			if len(f.Hits()) != 1 {
				t.Fatalf("the fault (%s on %s) did not hit; Append = %v", tt.mode, tt.op, err)
			}
			if err == nil || errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("Append with %s on %s = %v, want a transient error", tt.mode, tt.op, err)
			}
			for i := range 3 {
				if _, err := w.Append(ctxT(t)); err != nil {
					t.Fatalf("Append %d after %s on %s = %v; nobody else holds the ledger", i+1, tt.mode, tt.op, err)
				}
			}
			es := readVerified(t, c)
			if n := len(es); n != 5 && !(n == 6 && tt.op == "ledger_append" && tt.mode != failBeforeSend) {
				t.Fatalf("%d entries, want 2 + 3 (+1 if the faulted append landed): %+v", n, es)
			}
			// Fencing still works after the recovery.
			if _, err := ledger.Open(ctxT(t), c, "leader", 2, "b", opts); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(ctxT(t)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("Append after a newer term's Open = %v, want ErrFenced", err)
			}
		})
	}
}
