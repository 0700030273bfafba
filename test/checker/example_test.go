package checker_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// A leader is killed at 07:00:05 after its last renew at 07:00:04; another
// worker takes over at 07:00:20, within L + P·1.1 + ε = 17.1 s of that renew.
// The killed leader's belief ends at its own valid_until (the kill caps only a
// belief that logged none).
func ExampleCheck() {
	history := `
{"t":"2026-11-21T07:00:00Z","mono_ns":1,"identity":"w1","event":"started_leading","term":1,"valid_until":"2026-11-21T07:00:10Z"}
{"t":"2026-11-21T07:00:04Z","mono_ns":2,"identity":"w1","event":"renewed","term":1,"valid_until":"2026-11-21T07:00:14Z"}
{"t":"2026-11-21T07:00:20Z","mono_ns":3,"identity":"w2","event":"started_leading","term":2,"valid_until":"2026-11-21T07:00:30Z"}
`
	events, err := checker.ParseHistory(strings.NewReader(history), "example.jsonl")
	if err != nil {
		panic(err)
	}
	kill := time.Date(2026, 11, 21, 7, 0, 5, 0, time.UTC)
	res, err := checker.Check(checker.Run{
		Events:  events,
		Faults:  []checker.Fault{{Kind: checker.FaultCrash, Target: "w1", Start: kill}},
		Workers: []checker.Worker{{Identity: "w2", Alive: true, Contending: true}},
	}, checker.DefaultParams())
	if err != nil {
		panic(err)
	}
	fmt.Println("violations:", len(res.Violations))
	for _, f := range res.Failovers {
		fmt.Printf("%s of %s: %s took over after %v (bound %v, from %s)\n", f.Kind, f.Leader, f.NewLeader, f.Duration, f.Bound, f.Basis)
	}
	for _, iv := range res.Intervals {
		fmt.Printf("%s term %d ended by %s\n", iv.Identity, iv.Term, iv.EndedBy)
	}
	// Output:
	// violations: 0
	// crash of w1: w2 took over after 16s (bound 17.1s, from last renew sent)
	// w1 term 1 ended by valid_until
	// w2 term 2 ended by valid_until
}
