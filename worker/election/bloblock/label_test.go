package bloblock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// A labelled lock creates its blob with the label, keeps it through record
// writes, and refuses a record whose label names something else.
func TestLock_LabelIsWrittenKeptAndChecked(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	c, _ := newContainer(t)
	mine, err := newLock(t, c).Labelled("resource", `"customer-42"`)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newLock(t, c).Labelled("resource", `"customer-43"`)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	if err := mine.Acquire(ctx, id, 15*time.Second); err != nil { // creates the blob
		t.Fatal(err)
	}
	if _, err := other.Get(ctx); !errors.Is(err, lease.ErrUnusableRecord) {
		t.Fatalf("Get by another label after the create = %v, want ErrUnusableRecord", err)
	}
	if err := mine.Update(ctx, id, lease.Record{Holder: "a", Term: 9}); err != nil {
		t.Fatal(err)
	}
	if rec, err := mine.Get(ctx); err != nil || rec.Term != 9 {
		t.Fatalf("Get by the same label = %+v, %v; want term 9", rec, err)
	}
	if _, err := other.Inspect(ctx); !errors.Is(err, lease.ErrUnusableRecord) {
		t.Fatalf("Inspect by another label after a record write = %v, want ErrUnusableRecord", err)
	}
	if _, err := newLock(t, c).Get(ctx); err != nil {
		t.Fatalf("Get without a label = %v, want the record", err)
	}
}

func TestLabelled_RefusesKeysAndValuesStorageCannotCarry(t *testing.T) {
	c, _ := newContainer(t)
	l := newLock(t, c)
	for _, tc := range []struct{ name, key, value string }{
		{"record key", "term", "x"},
		{"record key in capitals", "Mode", "x"},
		{"process key", "process", "x"},
		{"empty key", "", "x"},
		{"key with a dash", "re-source", "x"},
		{"key starting with a digit", "1resource", "x"},
		{"empty value", "resource", ""},
		{"non-ASCII value", "resource", "é"},
		{"leading space", "resource", " x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := l.Labelled(tc.key, tc.value); err == nil {
				t.Fatalf("Labelled(%q, %q) = nil error, want a refusal", tc.key, tc.value)
			}
		})
	}
}
