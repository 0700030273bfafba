//go:build azure

package azure

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestOffline_CopyInfraKeepsTheLockFile: the suite applies a copy of infra/;
// without the committed lock file that copy would resolve the provider
// afresh (and trust whatever the registry serves) instead of the locked
// version and hashes. State, caches and the harness's own directories stay
// behind.
func TestOffline_CopyInfraKeepsTheLockFile(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"infra/main.tf":                  "# main",
		"infra/.terraform.lock.hcl":      "# lock",
		"infra/terraform.tfstate":        "{}",
		"infra/.terraform/providers/x":   "binary",
		"infra/tests/unit/a.tftest.hcl":  "# test",
		"infra/scripts/deploy.sh":        "#!/bin/sh",
		"infra/examples/default/main.tf": "# example",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := t.TempDir()
	if err := CopyInfra(root, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"main.tf": true, ".terraform.lock.hcl": true,
		"terraform.tfstate": false, ".terraform/providers/x": false, "tests/unit/a.tftest.hcl": false,
		"scripts/deploy.sh": false, "examples/default/main.tf": false,
	} {
		_, err := os.Stat(filepath.Join(dst, name))
		if got := err == nil; got != want {
			t.Errorf("copy has %s: %v, want %v", name, got, want)
		}
	}
}

// TestOffline_CopyInfraHasEveryFileTheConfigurationReads: the suite applies
// the copy, so every file the configuration reads (templatefile, file) must
// be in it; Terraform evaluates templatefile() even for rules that are off.
func TestOffline_CopyInfraHasEveryFileTheConfigurationReads(t *testing.T) {
	dst := t.TempDir()
	if err := CopyInfra(repoRoot(t), dst); err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`\$\{path\.module\}/([^"]+)"`)
	tfs, err := filepath.Glob(filepath.Join(dst, "*.tf"))
	if err != nil || len(tfs) == 0 {
		t.Fatalf("no .tf files in the copy (%v)", err)
	}
	seen := 0
	for _, tf := range tfs {
		b, err := os.ReadFile(tf)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range refs.FindAllStringSubmatch(string(b), -1) {
			seen++
			if _, err := os.Stat(filepath.Join(dst, m[1])); err != nil {
				t.Errorf("%s reads %s, which the copy lacks", filepath.Base(tf), m[1])
			}
		}
	}
	if seen == 0 {
		t.Fatal("no ${path.module}/… reference found in the copied configuration: the check saw nothing")
	}
}
