package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// The test binary doubles as ledgercmd when asked (no separate build).
func TestMain(m *testing.M) {
	if os.Getenv("LEDGERCMD_BE_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append([]string{"LEDGERCMD_BE_MAIN=1", "PATH=" + os.Getenv("PATH")}, env...)
	return cmd
}

func TestLedgercmd_RefusesToRunOutsideASupervisor(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no term", []string{"BLOBLEADER_IDENTITY=a"}, "BLOBLEADER_TERM"},
		{"bad term", []string{"BLOBLEADER_TERM=x", "BLOBLEADER_IDENTITY=a"}, "BLOBLEADER_TERM"},
		{"no identity", []string{"BLOBLEADER_TERM=5"}, "BLOBLEADER_IDENTITY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := command(tt.env, "--activity", filepath.Join(t.TempDir(), "a")).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tt.want) {
				t.Fatalf("err %v, output %q: want exit 2 naming %s", err, out, tt.want)
			}
		})
	}
}

// A command of a newer term fences the ledger; the older one's next
// appends are refused, and it says so in its activity log.
func TestLedgercmd_OlderTermIsFenced(t *testing.T) {
	az := azuritetest.StartT(t)
	activity := filepath.Join(t.TempDir(), "activity.jsonl")
	start := func(term, id string) *exec.Cmd {
		cmd := command([]string{"BLOBLEADER_TERM=" + term, "BLOBLEADER_IDENTITY=" + id, "AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()},
			"--container", "ledgercmd", "--activity", activity, "--interval", "50ms")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	await := func(what string, pred func(map[string]any) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			f, err := os.Open(activity)
			if err != nil {
				continue
			}
			for sc := bufio.NewScanner(f); sc.Scan(); {
				var a map[string]any
				if json.Unmarshal(sc.Bytes(), &a) == nil && pred(a) {
					f.Close()
					return
				}
			}
			f.Close()
		}
		t.Fatalf("no %s in the activity log", what)
	}
	// The container must exist (a supervisor creates it in real use).
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: az.ConnectionString(), Container: "ledgercmd", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	start("10", "a")
	await("an append of term 10", func(a map[string]any) bool {
		return a["holder"] == "a" && strings.HasPrefix(a["what"].(string), "append ok")
	})
	start("11", "b")
	await("an append of term 11", func(a map[string]any) bool {
		return a["holder"] == "b" && strings.HasPrefix(a["what"].(string), "append ok")
	})
	await("a refused append of term 10", func(a map[string]any) bool {
		return a["holder"] == "a" && strings.HasPrefix(a["what"].(string), "append fenced")
	})
}
