package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every BLOBLEADER_* name the repository sets or reads outside its prose
// (the Makefiles, the harness, the infrastructure, the binary) is known to
// the unknown-variable warning: make test runs every test with
// BLOBLEADER_RETRY_LOG set and the tests start blobleader with their
// environment, so a harness name the warning does not know turns into a
// warning line on every command's stderr, and every test that reads
// stderr or the log line by line fails under make test and passes alone.
func TestEnv_EveryNameTheRepositoryUsesIsKnown(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`BLOBLEADER_[A-Z0-9_]+`)
	used := map[string]string{} // name -> the first file that names it
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", ".terraform":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".mk", ".tf", ".hcl", ".sh", ".yml", ".yaml", ".js", ".json":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(b), -1) {
			if _, ok := used[n]; !ok {
				used[n] = strings.TrimPrefix(path, root+"/")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 20 {
		t.Fatalf("found %d BLOBLEADER_* names under %s; the walk did not see the repository", len(used), root)
	}
	known := knownEnv()
	var unknown []string
	for n, file := range used {
		// A prefix (envOthers), or the misspelling the warning's own
		// tests set on purpose.
		if strings.HasSuffix(n, "_") || n == "BLOBLEADER_LEASE_DURATON" {
			continue
		}
		if !knownName(n, known) {
			unknown = append(unknown, n+" ("+file+")")
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		t.Errorf("%d of %d BLOBLEADER_* names the repository uses would be warned about as unknown:\n  %s",
			len(unknown), len(used), strings.Join(unknown, "\n  "))
	}
}
