package election

import (
	"fmt"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// NextTerm is the term rule of every new holding of a lock: above the
// stored term, above the highest term the caller has seen or held, and
// above the lock's term floor (lease.Lock.TermFloor), so that neither a
// record recreated after its blob was deleted nor one restored to an older
// copy can hand out a term at or below one already used (under the
// assumption in the package doc, "Non-guarantees"). An error wrapping
// lease.ErrUnusableRecord says the next term would pass lease.MaxTerm; the
// record must then be left as it is.
func NextTerm(stored, highest, floor int64) (int64, error) {
	base := max(stored, highest, floor)
	if base >= lease.MaxTerm {
		return 0, fmt.Errorf("%w: term %d cannot grow (the next would pass %d, the highest term)", lease.ErrUnusableRecord, base, int64(lease.MaxTerm))
	}
	return base + 1, nil
}
