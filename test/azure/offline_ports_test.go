//go:build azure

package azure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A port a test hands to a process it starts later (a worker, a sidecar)
// is reserved (azuritetest.ReservePort), not picked free: a port picked
// free is in the kernel's ephemeral range and unheld, so any process on
// the machine may bind it before the worker does, which then exits 2
// ("cannot listen on --listen") for the machine's sake. Only a port where
// nothing is to listen may be picked free.
func TestOffline_TestsReserveThePortsTheyHandOn(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no source files read: %v", err)
	}
	var picked []string
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "azuritetest."+"FreePort()") && !strings.Contains(line, "// nothing listens there") {
				picked = append(picked, fmt.Sprintf("%s:%d", name, i+1))
			}
		}
	}
	if len(picked) > 0 {
		t.Errorf("%d ports picked free and handed on (reserve them: azuritetest.ReservePort):\n%s", len(picked), strings.Join(picked, "\n"))
	}
}
