package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/blobleader/blobleader/worker/ledger"
)

// runLedger prints the ledger, and with --verify checks it: seq contiguous
// from 1, no duplicates, terms never decreasing. Exit 1 if it breaks a rule.
func runLedger(args []string, stdout, _ io.Writer) error {
	var r readFlags
	var verify, asJSON bool
	fs := newFlagSet("blobleader ledger", stdout, `blobleader ledger — print (and verify) the fenced ledger the leaders write.

Usage:
  blobleader ledger [--verify] [--json] [storage flags]`)
	r.register(fs.FlagSet)
	fs.BoolVar(&verify, "verify", false, "check the ledger: seq contiguous from 1, no duplicates, terms never decreasing; exit 1 if not")
	fs.BoolVar(&asJSON, "json", false, "print entries as JSON lines instead of a table")
	entries, err := readStorage(&r, fs, args, ledger.ReadAll)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
	} else {
		fmt.Fprintf(stdout, "%8s %6s  %-30s %s\n", "SEQ", "TERM", "HOLDER", "AT")
		for _, e := range entries {
			fmt.Fprintf(stdout, "%8d %6d  %-30s %s\n", e.Seq, e.Term, e.Holder, e.At.Format(time.RFC3339Nano))
		}
	}
	if verify {
		if err := ledger.Verify(entries); err != nil {
			return err
		}
		terms := map[int64]bool{}
		for _, e := range entries {
			terms[e.Term] = true
		}
		fmt.Fprintf(stdout, "verified: %d entries, %d terms, no gaps or duplicates, terms never decrease\n", len(entries), len(terms))
	}
	return nil
}
