package storage

import (
	"fmt"
	"strconv"
	"strings"
)

// MetaTerm is the metadata name of the fencing term on every blob a term
// guards: the lock blob (its record), each ledger segment and each shard
// document. Its value is the term in decimal.
const MetaTerm = "term"

// MetadataValue is the value of metadata name in md, or "" when there is
// none (see lookup).
func MetadataValue(md map[string]*string, name string) string {
	v, _ := lookup(md, name)
	return v
}

// lookup finds metadata name in md. Azure compares metadata names
// case-insensitively, and the SDK may hand them back capitalised, so name
// is matched in any case.
func lookup(md map[string]*string, name string) (string, bool) {
	for k, v := range md {
		if v != nil && strings.EqualFold(k, name) {
			return *v, true
		}
	}
	return "", false
}

// Term reads the fencing term from a blob's metadata (MetaTerm): 0 when
// there is none, and otherwise the value, which must be a non-negative
// integer. A value that is not (an operator's typo) is an error naming it,
// with term 0.
func Term(md map[string]*string) (int64, error) {
	v, ok := lookup(md, MetaTerm)
	if !ok {
		return 0, nil
	}
	t, err := strconv.ParseInt(v, 10, 64)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("metadata term %q is not a non-negative integer", v)
	}
	return t, nil
}
