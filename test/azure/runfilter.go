//go:build azure

package azure

import (
	"regexp"
	"strings"
)

// suiteTest is the top-level test the stages run under.
const suiteTest = "TestAzure_Election"

// ShardStageRuns says which shard scenarios the shard stage would run for a
// deployment of groups worker groups under `go test -run runPattern`: the
// stage pays for a Terraform apply only when at least one is left.
func ShardStageRuns(all []ShardScenario, groups int, runPattern string) []ShardScenario {
	var out []ShardScenario
	for _, s := range all {
		if s.Skip == "" && groups >= s.Workers && RunSelects(runPattern, suiteTest, "Shards_"+s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// RunSelects reports whether `go test -run pattern` runs the (sub)test named
// by names, one name per level, as the testing package decides: the pattern
// splits at slashes outside brackets and parentheses into one unanchored
// regular expression per level; levels beyond the pattern's always match. An
// invalid expression selects nothing (go test would refuse to start).
func RunSelects(pattern string, names ...string) bool {
	if pattern == "" {
		return true
	}
	for i, p := range splitRunPattern(pattern) {
		if i >= len(names) {
			break
		}
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(names[i]) {
			return false
		}
	}
	return true
}

func splitRunPattern(p string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth = max(0, depth-1)
		case '\\':
			i++ // an escaped character never splits
		case '/':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, strings.Clone(p[start:]))
}
