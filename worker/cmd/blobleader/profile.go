package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// Timing profiles (--profile NAME, env BLOBLEADER_PROFILE; README, "Timing
// profiles"): named bundles of flag values. A profile only supplies the
// values of the flags that were not given (on the command line or by their
// env twins): explicit flags override it, and the result is validated like
// any other combination. A refusal that names a flag the profile set says
// so (cmdFlags.explain).

// profile is one bundle: flag name → value, for the flags of every
// contending mode; a flag the command does not have (--kill-grace outside
// run) is skipped.
type profile struct {
	name  string
	about string
	flags map[string]string
}

// timingFlags are the election's flags of c.
func timingFlags(c election.Config) map[string]string {
	return map[string]string{
		"lease-duration": c.LeaseDuration.String(),
		"renew-deadline": c.RenewDeadline.String(),
		"renew-interval": c.RenewInterval.String(),
		"retry-period":   c.RetryPeriod.String(),
		"takeover-after": c.TakeoverAfter.String(),
	}
}

// with adds flag=value to a bundle.
func with(m map[string]string, flag string, v time.Duration) map[string]string {
	m[flag] = v.String()
	return m
}

// fastKillGrace is `run --profile fast`'s --kill-grace: with early takeover
// the grace comes before the end of leadership, so the command's own window
// after its last heartbeat is D − kill-grace (1.25 s), which must hold a
// heartbeat cycle answered within the timeout (1 s; runoptions.go).
const fastKillGrace = 250 * time.Millisecond

// profiles are the named bundles, default first.
var profiles = []profile{
	{
		name:  "default",
		about: "L 15s, D 10s, renew 2s, P 1s, no early takeover: a dead host's lease is waited out (~14.5s)",
		flags: with(timingFlags(election.DefaultConfig("")), "kill-grace", time.Second),
	},
	{
		name:  "fast",
		about: "L 15s, D 1.5s, renew 500ms, P 500ms, early takeover after 2.25s (kill grace 250ms under run): a dead host is replaced in ~2.3s",
		flags: with(timingFlags(election.FastConfig("")), "kill-grace", fastKillGrace),
	},
}

func profileNames() string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

func profileUsage() string {
	var b strings.Builder
	b.WriteString("timing profile: a validated bundle of the timing flags; explicit flags override it. ")
	for i, p := range profiles {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", p.name, p.about)
	}
	return b.String()
}

// applyProfile sets, from the profile named by --profile, every flag of fs
// the profile has a value for and that was not given, and remembers which
// (cmdFlags.fromProfile) so that a refusal can say where a value came from.
func (o *options) applyProfile(fs *cmdFlags) error {
	var p *profile
	for i := range profiles {
		if profiles[i].name == o.profile {
			p = &profiles[i]
		}
	}
	if p == nil {
		return usagef("invalid %s %q: must be one of %s (README, \"Timing profiles\")", flagRef("profile"), o.profile, profileNames())
	}
	names := make([]string, 0, len(p.flags))
	for name := range p.flags {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil || fs.set(name) || f.Value.String() == p.flags[name] {
			continue
		}
		if err := f.Value.Set(p.flags[name]); err != nil {
			return fmt.Errorf("profile %s: --%s %s: %w", p.name, name, p.flags[name], err) // a bug in the table, not the user's
		}
		fs.fromProfile[name] = p.name
	}
	return nil
}
