// Command noclone3 runs a command under a seccomp filter that answers
// clone3 with ENOSYS (chaos.NoClone3: Docker's default profile):
//
//	noclone3 -- COMMAND [ARGS...]
//
// It installs the filter and execs COMMAND (same pid). Exit 2 on bad use,
// 1 if the filter or the exec fails.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/blobleader/blobleader/chaos"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: noclone3 -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "noclone3:", err)
		os.Exit(1)
	}
	if err := chaos.InstallNoClone3(); err != nil {
		fmt.Fprintln(os.Stderr, "noclone3:", err)
		os.Exit(1)
	}
	err = syscall.Exec(path, os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "noclone3: exec:", err)
	os.Exit(1)
}
