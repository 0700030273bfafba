package chaos

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Under the filter clone3 is refused with ENOSYS, clone (fork) still works,
// and the filter is inherited across exec. The test binary installs it in
// a child (role noclone3) that execs itself in role probe-clone3.
func TestNoClone3_RefusesClone3AndNothingElse(t *testing.T) {
	if Clone3Refused() {
		t.Skip("clone3 is already refused here (an older kernel or a filter of our own): nothing to show")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fixtureEnv+"=noclone3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "clone3 refused; fork ok" {
		t.Fatalf("under the filter: %q, want clone3 refused and fork working", got)
	}
	argv, err := (&NoClone3{Helper: "/bin/helper"}).Wrap([]string{"cmd", "a"})
	if err != nil || strings.Join(argv, " ") != "/bin/helper -- cmd a" {
		t.Fatalf("Wrap = %q, %v", argv, err)
	}
	if _, err := (&NoClone3{}).Wrap([]string{"cmd"}); err == nil {
		t.Fatal("Wrap without a helper should fail")
	}
}

// noclone3Fixture installs the filter and execs the probe; the probe says
// what it can do.
func noclone3Fixture(mode string) int {
	if mode == "noclone3" {
		if err := InstallNoClone3(); err != nil {
			os.Stdout.WriteString(err.Error() + "\n")
			return 1
		}
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, fixtureEnv+"=") {
				env = append(env, kv)
			}
		}
		env = append(env, fixtureEnv+"=probe-clone3")
		if err := syscall.Exec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, env); err != nil {
			return 1
		}
	}
	fork := "fork ok"
	if err := exec.Command("true").Run(); err != nil {
		fork = "fork failed: " + err.Error()
	}
	if Clone3Refused() {
		os.Stdout.WriteString("clone3 refused; " + fork + "\n")
	} else {
		os.Stdout.WriteString("clone3 allowed; " + fork + "\n")
	}
	return 0
}
