// Package buildinfo is what the build recorded about the binary — the
// module's version, the Go version, the VCS revision — for `blobleader
// --version` and the blobleader_build_info metric
// (docs/architecture.md#worker-contracts).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is one build's record. Version is the main module's: its tag when
// installed with go install …@vX.Y.Z, "(devel)" when built in a checkout.
// The VCS fields are empty unless the build stamped them (go build's
// -buildvcs; the Makefile builds with -buildvcs=false).
type Info struct {
	Version   string
	GoVersion string
	Platform  string // GOOS/GOARCH
	Revision  string // vcs.revision
	Time      string // vcs.time, RFC 3339
	Modified  bool   // vcs.modified: built from a working tree with changes
}

// Read returns this binary's record.
func Read() Info {
	info := Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the record on one line: "v0.1.0 go1.26.0 linux/amd64", then
// "revision <rev> [modified] <time>" when the build stamped one.
func (i Info) String() string {
	parts := []string{i.Version, i.GoVersion, i.Platform}
	if i.Revision != "" {
		parts = append(parts, "revision", i.Revision)
		if i.Modified {
			parts = append(parts, "modified")
		}
		if i.Time != "" {
			parts = append(parts, i.Time)
		}
	}
	return strings.Join(parts, " ")
}
