package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Anchors as GitHub renders them for headings the docs have.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Shards: Leader-Followers (`--shards N`)":       "shards-leader-followers---shards-n",
		"Commands under `blobleader run`":               "commands-under-blobleader-run",
		"Liveness and readiness":                        "liveness-and-readiness",
		"Resource locks — named locks for any language": "resource-locks--named-locks-for-any-language",
		"10. Host loss: [early takeover](#x)":           "10-host-loss-early-takeover",
		"Exit codes & signals":                          "exit-codes--signals",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// A link to a missing file or heading is reported with where it is; links
// inside code are not links; a repeated heading's second anchor is -1.
func TestChecker(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# Top\n## Same\n## Same\n<a id=\"here\"></a>\n[ok](#same-1) [ok](b.md#b) [ok](#here) [bad](#nope) [bad](c.md)\n```\n[not a link](#nope2)\n```\n`[code](#nope3)`\n")
	write("docs/b.md", "# B\n")
	write("x.go", "package x\n\n/"+"/ See docs/a.md#top and docs/a.md#gone.\n")
	c := &checker{root: dir, anchors: map[string]map[string]bool{}}
	c.markdown("docs/a.md")
	c.goComments("x.go")
	got := strings.Join(c.broken, "\n")
	for _, want := range []string{"docs/a.md:5: #nope: docs/a.md has no heading with anchor #nope", "docs/a.md:5: c.md: no file docs/c.md", "x.go:3: docs/a.md#gone"} {
		if !strings.Contains(got, want) {
			t.Errorf("want a line with %q, got:\n%s", want, got)
		}
	}
	if c.checked != 7 || len(c.broken) != 3 {
		t.Errorf("checked %d, broken %d (%s); want 7 and 3", c.checked, len(c.broken), got)
	}
}
