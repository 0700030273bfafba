package bench

import (
	"testing"
)

func TestSchedule_EveryStepFitsItsSlot(t *testing.T) {
	steps := Schedule()
	if len(steps) != 7 {
		t.Fatalf("%d steps; the documented schedule has 7", len(steps))
	}
	sample := Sample("")
	for i, s := range steps {
		if s.Hold >= SlotLength {
			t.Errorf("step %d (%s) holds %v, not shorter than the %v slot", i+1, s.Name, s.Hold, SlotLength)
		}
		if f := s.Fault(); f == nil || string(f.Kind()) == "" {
			t.Errorf("step %d makes no fault", i+1)
		}
	}
	// After a restart at 40 s the slot still has room; and the sample's
	// slowest crash recovery (L + P) fits in one slot.
	if need := sample.Params.LeaseDuration + sample.Params.RetryPeriod; need >= SlotLength {
		t.Errorf("sample crash recovery %v does not fit the %v slot", need, SlotLength)
	}
}
