package buildinfo

import (
	"runtime"
	"testing"
)

func TestInfo_StringIsOneLineWithWhatTheBuildRecorded(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "(devel)", GoVersion: "go1.26.0", Platform: "linux/amd64"}, "(devel) go1.26.0 linux/amd64"},
		{Info{Version: "v0.1.0", GoVersion: "go1.26.0", Platform: "linux/arm64", Revision: "0123abcd", Time: "2026-01-02T03:04:05Z"},
			"v0.1.0 go1.26.0 linux/arm64 revision 0123abcd 2026-01-02T03:04:05Z"},
		{Info{Version: "(devel)", GoVersion: "go1.26.0", Platform: "linux/amd64", Revision: "0123abcd", Modified: true},
			"(devel) go1.26.0 linux/amd64 revision 0123abcd modified"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	if got := Read(); got.GoVersion != runtime.Version() || got.Version == "" {
		t.Errorf("Read() = %+v, want this Go version and a module version", got)
	}
}
