package main

import (
	"runtime"
	"slices"
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

// Every command answers --help with its usage on stdout, exit 0, nothing
// on stderr: the worker, each subcommand (the table main dispatches on, so
// a new one is covered) and version.
func TestHelp_EveryCommandPrintsItsUsageAndExitsZero(t *testing.T) {
	t.Parallel()
	cmds := [][]string{{}, {"version"}}
	for name := range subcommands {
		cmds = append(cmds, []string{name})
	}
	for _, cmd := range cmds {
		args := append(slices.Clone(cmd), "--help")
		code, stdout, stderr := runBinary(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "blobleader") {
			t.Errorf("blobleader %v: exit %d, stderr %q, stdout %q; want 0, nothing on stderr and the usage", args, code, stderr, stdout)
		}
	}
}
