package bloblock

import (
	"fmt"
	"strings"

	"github.com/blobleader/blobleader/worker/election/lease"
	"github.com/blobleader/blobleader/worker/storage"
)

// label is one metadata entry that every record of a lock carries beside
// its own: it names what the blob is for (the resource a named lock's
// hash-named blob stands for), so that a blob reached by a name that is not
// the one it was made for is refused rather than trusted.
type label struct{ key, value string }

// Labelled returns a lock on the same blob whose record carries key=value
// in its metadata: the blob is created with it, every record write (Update)
// writes it, and every read (Get, Stored, Inspect) checks it. A record with
// the key set to another value belongs to something else: reading it fails
// with an error wrapping lease.ErrUnusableRecord, so nobody holds it. A
// record without the key (first use, or written by a lock without the
// label) is accepted, and the next record write adds the key. key is a
// metadata name (letters, digits, underscores, not starting with a digit)
// other than the record's own; value must be printable ASCII with no
// leading or trailing space, as every metadata value must.
func (l *Lock) Labelled(key, value string) (*Lock, error) {
	if err := checkLabel(key, value); err != nil {
		return nil, err
	}
	c := *l
	c.label = &label{key: strings.ToLower(key), value: value}
	return &c, nil
}

// recordKeys are the metadata names of the record itself.
var recordKeys = []string{metaHolder, storage.MetaTerm, metaAcquired, metaMode, metaProcess, metaHeartbeat, metaBeatEvery, metaStopAfterWrite}

func checkLabel(key, value string) error {
	for _, k := range recordKeys {
		if strings.EqualFold(key, k) {
			return fmt.Errorf("bloblock: label key %q is one of the record's own", key)
		}
	}
	for i, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("bloblock: label key %q must be letters, digits and underscores, not starting with a digit", key)
		}
	}
	if key == "" || value == "" || value[0] == ' ' || value[len(value)-1] == ' ' ||
		strings.ContainsFunc(value, func(r rune) bool { return r < ' ' || r > '~' }) {
		return fmt.Errorf("bloblock: label %s=%q must be a non-empty key and printable ASCII with no leading or trailing space", key, value)
	}
	return nil
}

// metadata is the label alone, for the blob's creation; nil without one.
func (lb *label) metadata() map[string]*string {
	if lb == nil {
		return nil
	}
	md := map[string]*string{}
	lb.add(md)
	return md
}

// add puts the label into a record's metadata.
func (lb *label) add(md map[string]*string) {
	if lb != nil {
		v := lb.value
		md[lb.key] = &v
	}
}

// record reads a lock's record from its metadata (RecordFromMetadata) and
// refuses one whose label key carries another value.
func (l *Lock) record(md map[string]*string) (lease.Record, error) {
	r, err := RecordFromMetadata(md)
	if err != nil || l.label == nil {
		return r, err
	}
	if v := storage.MetadataValue(md, l.label.key); v != "" && v != l.label.value {
		return r, fmt.Errorf("%w: its %s is %q, not %q: the blob belongs to something else", lease.ErrUnusableRecord, l.label.key, v, l.label.value)
	}
	return r, nil
}
