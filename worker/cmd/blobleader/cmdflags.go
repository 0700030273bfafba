package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// usageError is an invalid configuration: exit 2, one line naming the flag
// or env var, the rule and the value. The flags it names are arguments of
// their own (flagRef, configRule), so that the command that parsed them
// shows each under the name its value came from (cmdFlags.explain).
type usageError struct {
	format string
	args   []any
	// fromEnv maps a flag to the env var its value came from; nil: none.
	fromEnv map[string]string
	// explained: a command's explain has named its flags (once is enough).
	explained bool
}

func usagef(format string, args ...any) error { return &usageError{format: format, args: args} }

// flagRef is a flag named in a usage error: shown as --tick, or, when its
// value came from its env twin, as "BLOBLEADER_TICK (--tick)" the first
// time and BLOBLEADER_TICK after.
type flagRef string

// configRule is a library config error's rule in a usage error, each field
// it names shown as the flag that sets it (flags: field → flag name).
type configRule struct {
	err   *election.ConfigError
	flags map[string]string
}

func (e *usageError) Error() string {
	seen := map[string]bool{}
	name := func(flag string) string {
		env, ok := e.fromEnv[flag]
		switch {
		case !ok:
			return "--" + flag
		case seen[flag]:
			return env
		}
		seen[flag] = true
		return env + " (--" + flag + ")"
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		switch a := a.(type) {
		case flagRef:
			args[i] = name(string(a))
		case configRule:
			args[i] = a.err.RuleNaming(func(field string) string {
				if flag, ok := a.flags[field]; ok {
					return name(flag)
				}
				return field
			})
		default:
			args[i] = a
		}
	}
	return fmt.Sprintf(e.format, args...)
}

// envName is flag name's env twin: BLOBLEADER_ and the name in capitals,
// "-" as "_".
func envName(flagName string) string {
	return "BLOBLEADER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// cmdFlags is one command's flag set. It reads each flag's env twin, then
// the command line, remembers which values came from the environment, and
// reports every error in one line naming where the value came from and the
// form it must have; only --help prints the usage.
type cmdFlags struct {
	*flag.FlagSet
	name    string            // the command, e.g. "blobleader ledger"
	help    func()            // prints the usage (--help)
	fromEnv map[string]string // flag name → the variable its value came from
	// fromProfile: flag name → the --profile whose bundle set it (profile.go)
	fromProfile map[string]string
	hidden      map[string]bool   // flags accepted but not listed by --help (hide)
	refused     map[string]string // flag name → why it is refused on the command line (refuse)
	bad         error             // what the last refused value was, described
}

func newFlagSet(name string, out io.Writer, summary string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are ours, one line each
	fs.Usage = func() {}
	c := &cmdFlags{FlagSet: fs, name: name, fromEnv: map[string]string{}, fromProfile: map[string]string{}, hidden: map[string]bool{}, refused: map[string]string{}}
	c.help = func() {
		fmt.Fprintf(out, "%s\n\nFlags (each also read from its env twin BLOBLEADER_<NAME>; a flag beats its env var):\n", summary)
		fs.VisitAll(func(f *flag.Flag) {
			if c.hidden[f.Name] {
				return
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(out, "  --%s\n      %s%s  [%s]\n", f.Name, f.Usage, def, envName(f.Name))
		})
	}
	return c
}

// hide keeps flag name out of --help and out of the suggestions for a
// misspelt flag; it is still accepted.
func (c *cmdFlags) hide(name string) { c.hidden[name] = true }

// refuse hides flags a command sets itself (a flag set it shares with
// another command registers them): given on the command line, each is
// refused saying why; their env twins are ignored.
func (c *cmdFlags) refuse(why string, names ...string) {
	for _, name := range names {
		c.hide(name)
		c.refused[name] = why
	}
}

// parse applies the env twins, then the command line. A flag given on the
// command line beats its twin, whose value is then never judged, even if
// malformed; --help prints the usage whatever the environment holds. A
// malformed twin the command line does not override is refused under its
// name ("invalid BLOBLEADER_TICK (--tick) "x": must be a duration …").
func (c *cmdFlags) parse(args []string) error {
	c.VisitAll(func(f *flag.Flag) { f.Value = c.checked(f) })
	envErrs := map[string]error{} // flag name → its twin's malformed value, described
	c.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv(envName(f.Name))
		if _, refused := c.refused[f.Name]; !ok || refused {
			return
		}
		c.fromEnv[f.Name] = envName(f.Name)
		if err := f.Value.Set(v); err != nil {
			envErrs[f.Name] = c.bad
			c.bad = nil // judged below, unless the command line overrides it
		}
	})
	if err := c.Parse(args); err != nil {
		return c.parseError(err)
	}
	var refused error
	c.Visit(func(f *flag.Flag) {
		delete(c.fromEnv, f.Name) // a flag beats its env var
		delete(envErrs, f.Name)
		if why, ok := c.refused[f.Name]; ok && refused == nil {
			refused = usagef("%s is not a flag of %s: %s", flagRef(f.Name), c.name, why)
		}
	})
	if refused != nil {
		return refused
	}
	var envErr error
	c.VisitAll(func(f *flag.Flag) { // in name order: the same twin named every time
		if err, ok := envErrs[f.Name]; ok && envErr == nil {
			envErr = c.explain(err)
		}
	})
	if envErr != nil {
		return envErr
	}
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", c.Arg(0))
	}
	return nil
}

// The errors package flag returns (their text is the API).
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

func (c *cmdFlags) parseError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		c.help()
		return err
	}
	if c.bad != nil {
		return c.bad
	}
	if m := undefinedFlag.FindStringSubmatch(err.Error()); m != nil {
		if s := c.suggest(m[1]); s != "" {
			return usagef("unknown flag --%s: did you mean --%s? (%s --help lists the flags)", m[1], s, c.name)
		}
		return usagef("unknown flag --%s (%s --help lists the flags)", m[1], c.name)
	}
	if m := missingValue.FindStringSubmatch(err.Error()); m != nil {
		if f := c.Lookup(m[1]); f != nil {
			return usagef("%s needs a value: %s", flagRef(m[1]), formOf(f))
		}
	}
	return usagef("%v", err)
}

// checked wraps f's value so that a value of the wrong form is described
// (the form and an example) instead of flag's "parse error".
func (c *cmdFlags) checked(f *flag.Flag) flag.Value {
	if _, done := f.Value.(*checkedValue); done {
		return f.Value
	}
	v := &checkedValue{Value: f.Value, f: f, c: c}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return &checkedBool{v}
	}
	return v
}

type checkedValue struct {
	flag.Value
	f *flag.Flag
	c *cmdFlags
}

func (v *checkedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		rule := errors.New(formOf(v.f))
		v.c.bad = usagef("invalid %s %q: %v", flagRef(v.f.Name), s, rule)
		return rule
	}
	return nil
}

type checkedBool struct{ *checkedValue }

func (checkedBool) IsBoolFlag() bool { return true }

// formOf says what form f's values take, with an example.
func formOf(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if cv, wrapped := f.Value.(*checkedValue); wrapped {
		g, ok = cv.Value.(flag.Getter)
	} else if cb, wrapped := f.Value.(*checkedBool); wrapped {
		g, ok = cb.Value.(flag.Getter)
	}
	if !ok {
		return "not a valid value"
	}
	switch g.Get().(type) {
	case time.Duration:
		example := f.DefValue
		if example == "0s" {
			example = "10s"
		}
		return "must be a duration with a unit (ms, s, m, h), e.g. " + example
	case bool:
		return "must be true or false (or 1, 0, t, f)"
	case int, int64, uint, uint64:
		return "must be a whole number"
	case float64:
		return "must be a number"
	}
	return "not a valid value"
}

// suggest is the defined flag closest to name, if one is close enough to be
// a typo of it ("" otherwise).
func (c *cmdFlags) suggest(name string) string {
	name, _, _ = strings.Cut(name, "=")
	var names []string
	c.VisitAll(func(f *flag.Flag) {
		if !c.hidden[f.Name] {
			names = append(names, f.Name)
		}
	})
	return nearest(name, names)
}

// nearest is the candidate closest to name, if one is close enough to be a
// typo of it ("" otherwise).
func nearest(name string, candidates []string) string {
	names := slices.Sorted(slices.Values(candidates))
	best, bestDist := "", max(2, len(name)/3)+1
	for _, n := range names {
		d := editDistance(name, n)
		if strings.HasPrefix(n, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost 1.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// explain has a usage error name every flag whose value came from the
// environment by its variable: "invalid --lease-duration 10s" is shown as
// "invalid BLOBLEADER_LEASE_DURATION (--lease-duration) 10s"; and say
// where the values of the flags it names that a profile set came from:
// "(--profile fast set --renew-deadline 1.5s)".
//
// It is the one way a command names its flags, in the refusals of parsing
// and in those built after it (a --history file that cannot be opened, a
// --listen port taken, recover-term's --floor against the stored term):
// each command passes every error it returns through the explain of the
// flag set it parsed (options.parsed, readOptions.parsed,
// locksOptions.parsed). A nil c (no flag set) and an error already
// explained are returned as they are.
func (c *cmdFlags) explain(err error) error {
	var ue *usageError
	if c == nil || !errors.As(err, &ue) || ue.explained || len(c.fromEnv)+len(c.fromProfile) == 0 {
		return err
	}
	if ue != err { // wrapped: keep the wrapper's text rather than lose it
		return err
	}
	named := *ue
	named.explained = true
	named.fromEnv = c.fromEnv
	note, args := c.profileNote(ue.Error())
	named.format += note
	named.args = append(slices.Clip(named.args), args...)
	return &named
}

// profileNote says which of the flags msg names a profile set, and to
// what: a refused combination the user did not write out in full names the
// part the profile supplied. It is a usage error's format and arguments to
// append ("", nil: no flag of a profile's).
func (c *cmdFlags) profileNote(msg string) (string, []any) {
	var names []string
	prof := ""
	for name, p := range c.fromProfile {
		if regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `([^a-z0-9-]|$)`).MatchString(msg) {
			names = append(names, name)
			prof = p
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.Sort(names)
	format, args := " (%s %s set", []any{flagRef("profile"), prof}
	for i, name := range names {
		if i > 0 {
			format += ","
		}
		format += " %s %s"
		args = append(args, flagRef(name), c.Lookup(name).Value.String())
	}
	return format + ")", args
}

// set says whether flag name was given, on the command line or by its env twin.
func (c *cmdFlags) set(name string) bool {
	if _, ok := c.fromEnv[name]; ok {
		return true
	}
	found := false
	c.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}
