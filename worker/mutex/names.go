package mutex

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// MaxResourceIDLength bounds a resource id, in bytes. The id is kept in the
// lock blob's metadata, escaped to ASCII (at most 4 bytes for each byte of
// the id), and Azure allows 8 KiB for all of a blob's metadata.
const MaxResourceIDLength = 1024

// metaResource is the metadata key that keeps the id a lock blob stands for.
const metaResource = "resource"

// ErrBadResourceID is matched when a resource id cannot name a lock.
var ErrBadResourceID = errors.New("mutex: invalid resource id")

// ResourceIDError says why an id cannot name a lock: the rule it breaks.
// It matches ErrBadResourceID.
type ResourceIDError struct {
	Rule string // e.g. "must not be empty"
}

func (e *ResourceIDError) Error() string { return ErrBadResourceID.Error() + ": " + e.Rule }

// Is makes errors.Is(err, ErrBadResourceID) true.
func (e *ResourceIDError) Is(target error) bool { return target == ErrBadResourceID }

// BlobName is the lock blob of resource id under prefix:
// prefix + "/" + the hex SHA-256 of the id. Any id of 1 to
// MaxResourceIDLength bytes — any bytes, "/" and "\" and dots included —
// maps to a fixed-length name storage keeps as written; distinct ids map to
// distinct names unless SHA-256 collides, and the id kept in the blob's
// metadata (checked on every read) refuses even that.
func BlobName(prefix, id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	return prefix + "/" + hashHex(id), nil
}

// BlobLease is the storage lease behind the lock of resource id under
// prefix in c (a lease.Lock): the lease on the blob BlobName names, whose
// record carries the id (metadata "resource") and is refused, as belonging
// to something else, if it carries another. Every holder of a named lock —
// Locker, blobleader locks, blobleader lock — uses this lease.
func BlobLease(c *container.Client, prefix, id string) (*bloblock.Lock, error) {
	name, err := BlobName(prefix, id)
	if err != nil {
		return nil, err
	}
	bl, err := bloblock.New(c, name)
	if err != nil {
		return nil, err
	}
	return bl.Labelled(metaResource, escapeID(id))
}

func checkID(id string) error {
	switch {
	case id == "":
		return &ResourceIDError{Rule: "must not be empty"}
	case len(id) > MaxResourceIDLength:
		return &ResourceIDError{Rule: fmt.Sprintf("must be at most %d bytes, not %d", MaxResourceIDLength, len(id))}
	}
	return nil
}

func hashHex(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// escapeID is the id as a metadata value: a Go string literal in ASCII
// (strconv.QuoteToASCII), which is printable ASCII, starts and ends with a
// quote (so no leading or trailing space), and decodes back to exactly the
// id (strconv.Unquote), invalid UTF-8 included.
func escapeID(id string) string { return strconv.QuoteToASCII(id) }
