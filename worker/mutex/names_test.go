package mutex_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/mutex"
	"github.com/blobleader/blobleader/worker/storage"
)

// Ids storage would rewrite or refuse as names, and ids that differ only in
// what storage rewrites, each map to a name storage keeps, and to distinct
// names; each is its own lock on Azurite.
func TestBlobName_AnyIDIsItsOwnLock(t *testing.T) {
	t.Parallel()
	ids := []string{
		"customer-42", "a/b", `a\b`, "a.", "a", "a/", "/a", "a//b", "é", "\xff\xfe",
		"\x00ctl", " space ", strings.Repeat("x", mutex.MaxResourceIDLength),
	}
	seen := map[string]string{}
	for _, id := range ids {
		name, err := mutex.BlobName(mutex.DefaultPrefix, id)
		if err != nil {
			t.Fatalf("BlobName(%q): %v", id, err)
		}
		if err := storage.CheckBlobName(name); err != nil {
			t.Fatalf("BlobName(%q) = %q, which storage would not keep: %v", id, name, err)
		}
		if prev, dup := seen[name]; dup {
			t.Fatalf("ids %q and %q share the blob %q", prev, id, name)
		}
		seen[name] = id
	}
	ctx := ctxT(t, 60*time.Second)
	l := newLocker(t, newContainer(t, nil), "a")
	for _, id := range ids { // all held at once: distinct locks
		h, err := l.TryLock(ctx, id)
		if err != nil {
			t.Fatalf("TryLock(%q): %v", id, err)
		}
		defer h.Unlock(ctx)
		if st, err := l.Read(ctx, id); err != nil || st.Resource != id || !st.Locked || st.Term != h.Term() {
			t.Fatalf("Read(%q) = %+v, %v", id, st, err)
		}
	}
}

func TestBlobName_RefusesIDsOutOfRange(t *testing.T) {
	for _, tc := range []struct{ name, id string }{
		{"empty", ""},
		{"too long", strings.Repeat("x", mutex.MaxResourceIDLength+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := mutex.BlobName("locks", tc.id); !errors.Is(err, mutex.ErrBadResourceID) {
				t.Fatalf("BlobName(%d bytes) = %v, want ErrBadResourceID", len(tc.id), err)
			}
		})
	}
}
