package chaos

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Under FullOutput every write to stdout or stderr fails with ENOSPC, and
// the pid is the process's own (the shell execs it).
func TestFullOutput_WritesFailWithENOSPCAndThePidIsKept(t *testing.T) {
	argv, err := (&FullOutput{}).Wrap([]string{"sh", "-c", `echo $$ >&3; if echo x; then echo wrote >&3; else echo failed >&3; fi`})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var report strings.Builder
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b := make([]byte, 256)
	for {
		n, err := r.Read(b)
		report.Write(b[:n])
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	lines := strings.Fields(report.String())
	if len(lines) != 2 || lines[1] != "failed" {
		t.Fatalf("report %q: want the pid, then a failed echo", report.String())
	}
	if lines[0] != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("the wrapped process has pid %s, want the started pid %d (the wrapper must exec)", lines[0], cmd.Process.Pid)
	}
	if (&FullOutput{}).Kind() != KindFullOutput {
		t.Fatal("kind")
	}
}
