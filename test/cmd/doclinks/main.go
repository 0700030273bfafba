// Command doclinks checks that every relative link in the repository's
// Markdown, and every `docs/….md#anchor` named in a Go comment, resolves:
// the file exists and, with an anchor, has a heading (or an explicit
// <a name>/<a id>) that GitHub renders under that anchor. It prints one
// line per link that does not resolve and exits 1; with none it prints how
// many it checked and exits 0. `make lint` runs it.
//
//	doclinks [-root DIR]
//
// Files are those git tracks under DIR (the repository's root by default).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: doclinks [-root DIR]\n\nChecks that every relative Markdown link and every docs/….md#anchor in a Go comment resolves.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "doclinks: unexpected argument %q (takes only -root)\n", flag.Arg(0))
		os.Exit(2)
	}
	files, err := tracked(*root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "doclinks: %v\n", err)
		os.Exit(2)
	}
	c := &checker{root: *root, anchors: map[string]map[string]bool{}}
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".md"):
			c.markdown(f)
		case strings.HasSuffix(f, ".go"):
			c.goComments(f)
		}
	}
	for _, b := range c.broken {
		fmt.Println(b)
	}
	if len(c.broken) > 0 {
		fmt.Printf("doclinks: %d of %d links do not resolve\n", len(c.broken), c.checked)
		os.Exit(1)
	}
	fmt.Printf("doclinks: %d links in Markdown and Go comments, every one resolves\n", c.checked)
}

// tracked lists the files git tracks below root, relative to it.
func tracked(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // file (relative to root) → its anchors
	checked int
	broken  []string
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	// goDocRef is a Markdown file named in a Go comment: a path from the
	// repository's root (docs/….md, README.md), with an anchor or not.
	goDocRef = regexp.MustCompile(`(?:^|[\s(\x60"])((?:docs/[A-Za-z0-9_./-]+|README|CHANGELOG)\.md)(#[A-Za-z0-9_-]+)?`)
)

// markdown checks the relative links of one Markdown file, outside code.
func (c *checker) markdown(file string) {
	lines, err := readLines(filepath.Join(c.root, file))
	if err != nil {
		c.broken = append(c.broken, fmt.Sprintf("%s: %v", file, err))
		return
	}
	for _, i := range outsideCode(lines) {
		line := lines[i]
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			c.check(fmt.Sprintf("%s:%d", file, i+1), target, path, anchor)
		}
	}
}

// goComments checks the Markdown files and anchors Go comments name.
func (c *checker) goComments(file string) {
	lines, err := readLines(filepath.Join(c.root, file))
	if err != nil {
		c.broken = append(c.broken, fmt.Sprintf("%s: %v", file, err))
		return
	}
	for i, line := range lines {
		_, comment, ok := strings.Cut(line, "//")
		if !ok {
			continue
		}
		for _, m := range goDocRef.FindAllStringSubmatch(comment, -1) {
			c.check(fmt.Sprintf("%s:%d", file, i+1), m[1]+m[2], m[1], strings.TrimPrefix(m[2], "#"))
		}
	}
}

// check records whether path (relative to the root) exists and, with an
// anchor, has it.
func (c *checker) check(where, target, path, anchor string) {
	c.checked++
	full := filepath.Join(c.root, path)
	if _, err := os.Stat(full); err != nil {
		c.broken = append(c.broken, fmt.Sprintf("%s: %s: no file %s", where, target, path))
		return
	}
	if anchor == "" || !strings.HasSuffix(path, ".md") {
		return
	}
	as, ok := c.anchors[path]
	if !ok {
		as = anchorsOf(full)
		c.anchors[path] = as
	}
	if !as[anchor] {
		c.broken = append(c.broken, fmt.Sprintf("%s: %s: %s has no heading with anchor #%s%s", where, target, path, anchor, nearest(as, anchor)))
	}
}

// nearest names the anchors of a file that share the wanted one's first
// word, as a hint.
func nearest(as map[string]bool, want string) string {
	first, _, _ := strings.Cut(want, "-")
	var near []string
	for a := range as {
		if strings.HasPrefix(a, first) {
			near = append(near, "#"+a)
		}
	}
	if len(near) == 0 {
		return ""
	}
	sort.Strings(near)
	if len(near) > 4 {
		near = near[:4]
	}
	return " (nearest: " + strings.Join(near, ", ") + ")"
}

var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

var explicitAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)

// anchorsOf lists a Markdown file's anchors as GitHub renders them.
func anchorsOf(path string) map[string]bool {
	as := map[string]bool{}
	lines, err := readLines(path)
	if err != nil {
		return as
	}
	seen := map[string]int{}
	for _, i := range outsideCode(lines) {
		line := lines[i]
		for _, m := range explicitAnchor.FindAllStringSubmatch(line, -1) {
			as[m[1]] = true
		}
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) > 3 || !strings.HasPrefix(trimmed, "#") {
			continue
		}
		text := strings.TrimLeft(trimmed, "#")
		if len(trimmed)-len(text) > 6 || (text != "" && text[0] != ' ') {
			continue
		}
		a := Slug(strings.TrimRight(strings.TrimSpace(text), "#"))
		if n := seen[a]; n > 0 {
			as[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			as[a] = true
		}
		seen[a]++
	}
	return as
}

// outsideCode lists the indexes of the lines outside fenced code blocks
// (the fence lines themselves excluded).
func outsideCode(lines []string) []int {
	var out []int
	fence := ""
	for i, line := range lines {
		switch f := fenceOf(line); {
		case f != "" && fence == "":
			fence = f
		case f != "" && strings.HasPrefix(f, fence):
			fence = ""
		case f == "" && fence == "":
			out = append(out, i)
		}
	}
	return out
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, with its
// length), or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	for _, ch := range []string{"`", "~"} {
		if strings.HasPrefix(t, ch+ch+ch) {
			n := len(t) - len(strings.TrimLeft(t, ch))
			return strings.Repeat(ch, n)
		}
	}
	return ""
}

// Slug is a heading's anchor as GitHub makes it: the text without its
// Markdown (links keep their text, code spans their content), lower case,
// every character that is not a letter, a digit, a space, '-' or '_'
// dropped, each space a '-'.
func Slug(heading string) string {
	heading = headingLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case isWord(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out, s.Err()
}
