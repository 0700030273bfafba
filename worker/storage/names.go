package storage

import (
	"fmt"
	"strings"
)

// MaxBlobName is the longest blob name Azure accepts: 1,024 characters. The
// rule counts bytes, which is never fewer than characters.
const MaxBlobName = 1024

// maxSegments is the most path segments ("/"-separated) a blob name may have.
const maxSegments = 254

// namingRules is Azure's page on blob names, cited by every refusal.
const namingRules = "https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs--and-metadata"

// CheckBlobName returns nil for a name storage keeps exactly as written —
// so a listing returns it as it was written, and a prefix built from it
// matches — and otherwise the rule it breaks, as a sentence that can follow
// "must" in a message naming the flag and the value:
//
//   - 1 to MaxBlobName bytes;
//   - no backslash: Azure (and Azurite) store "\" as "/";
//   - no control character (0x00–0x1F, 0x7F): storage refuses them;
//   - no empty path segment (a leading or trailing "/", or "//");
//   - no path segment ending in a dot: Azure drops trailing dots
//     (Azurite keeps them), so the name read back differs;
//   - at most 254 path segments.
//
// The rules are Azure's (namingRules); the backslash and the trailing dot
// are what Azure does beyond refusing.
func CheckBlobName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("not be empty")
	case len(name) > MaxBlobName:
		return fmt.Errorf("be at most %d bytes (Azure's limit for a blob name; %s), not %d", MaxBlobName, namingRules, len(name))
	case strings.Contains(name, `\`):
		return fmt.Errorf(`not contain "\\": Azure stores it as "/", so listings and prefixes no longer match the name (%s)`, namingRules)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("not contain control characters: storage refuses them (%s)", namingRules)
	}
	segs := strings.Split(name, "/")
	if len(segs) > maxSegments {
		return fmt.Errorf("have at most %d path segments (\"/\"-separated), not %d (%s)", maxSegments, len(segs), namingRules)
	}
	for _, s := range segs {
		switch {
		case s == "":
			return fmt.Errorf(`not have an empty path segment (a leading or trailing "/", or "//") (%s)`, namingRules)
		case strings.HasSuffix(s, "."):
			return fmt.Errorf("not have a path segment that ends with a dot (%q): Azure drops trailing dots, so the name read back differs (%s)", s, namingRules)
		}
	}
	return nil
}
