package main

import (
	"runtime"
	"strings"
	"testing"
)

// --version (and `blobleader version`) prints one line: the module's
// version as the build recorded it ("(devel)" for a local build), the Go
// version and the platform; exit 0, nothing on stderr.
func TestVersion_PrintsTheModuleVersionAndTheBuild(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, stderr := runBinary(t, nil, args...)
		line := strings.TrimSuffix(stdout, "\n")
		switch {
		case code != 0 || stderr != "":
			t.Fatalf("blobleader %v: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
		case strings.Contains(line, "\n") || !strings.HasPrefix(line, "blobleader "):
			t.Fatalf("blobleader %v printed %q, want one line starting \"blobleader \"", args, stdout)
		case !strings.Contains(line, runtime.Version()) || !strings.Contains(line, runtime.GOOS+"/"+runtime.GOARCH):
			t.Fatalf("blobleader %v printed %q, want the Go version %s and %s/%s", args, line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		}
	}
}
