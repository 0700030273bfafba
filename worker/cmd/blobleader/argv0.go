package main

import (
	"path/filepath"
	"slices"
)

// entryPoints are the names under which the binary runs one of its
// subcommands without being told: started as `status` (the worker image
// links /status to /blobleader) it is `blobleader status`. ACI's exec API
// runs a single executable and cannot pass it arguments ("/blobleader
// status" is looked up as one file name), and the image has no shell, so a
// one-word entry point is the only way an operator or the Azure test suite
// can ask a worker for its status from inside its container group.
var entryPoints = map[string]string{
	"status": "status",
}

// argsFor returns the arguments run gets for a process started as argv0
// with args: the subcommand of argv0's base name in front, or args as they
// are under any other name.
func argsFor(argv0 string, args []string) []string {
	if sub, ok := entryPoints[filepath.Base(argv0)]; ok {
		return append([]string{sub}, slices.Clone(args)...)
	}
	return args
}
