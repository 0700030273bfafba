package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// WalkerSignal is the signal a supervised test command takes as "start a
// fork-walker now" (test/cmd/ledgercmd does, with StartForkWalker).
const WalkerSignal = syscall.SIGUSR2

// ForkWalker makes a supervised command start a process that forks, calls
// setsid and exits, over and over (a hop every few milliseconds): at any
// moment one process of it lives, each time under another pid and in
// another session, re-parented to whichever subreaper is above it. A kill
// loop that scans /proc once and finds nothing misses it; one that stops
// after a scan that found nothing lets it live. The command does it itself
// on WalkerSignal (StartForkWalker); the fault delivers the signal to the
// command's pid. Run it only inside a Confine: nothing else is sure to end
// it. Nothing is removed: its fate is the supervisor's business.
type ForkWalker struct {
	PID  int    `json:"pid"`  // the supervised command
	Name string `json:"name"` // its supervisor, for the timeline

	sig commandSignal
}

var _ Fault = (*ForkWalker)(nil)

func (f *ForkWalker) Kind() Kind { return KindForkWalker }

// Target is the supervisor whose command starts the walker.
func (f *ForkWalker) Target() string { return f.Name }

// Inject signals the command to start its walker.
func (f *ForkWalker) Inject(ctx context.Context) error {
	return f.sig.send(ctx, "ForkWalker", f.PID, WalkerSignal)
}

// Remove forgets the fault.
func (f *ForkWalker) Remove(context.Context) error {
	f.sig.forget()
	return nil
}

// walkerScript is one hop of the walker (POSIX sh; $CHAOS_WALK holds the
// script itself): count the hop, report every 32nd as a JSON line of the
// activity file $1 (checker.Activity: holder and term from the supervisor's
// BLOBLEADER_IDENTITY and BLOBLEADER_TERM), then fork a new session
// (util-linux `setsid -f`), whose child is the next hop, and exit.
const walkerScript = `n=$(( ${2:-0} + 1 ))
if [ -n "$1" ] && [ $(( n % 32 )) -eq 0 ]; then
  printf '{"holder":"%s","term":%s,"pid":%d,"at":"%s","what":"walker alive %d"}\n' "$BLOBLEADER_IDENTITY" "${BLOBLEADER_TERM:-0}" $$ "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$n" >>"$1"
fi
exec setsid -f sh -c "$CHAOS_WALK" walker "$1" "$n"`

// StartForkWalker starts the walker below the calling process, reporting to
// the activity file (empty: no reports), with the caller's environment.
// The first hop is the caller's child; it is not waited for.
func StartForkWalker(activity string) error {
	c := exec.Command("sh", "-c", walkerScript, "walker", activity, "0")
	c.Env = append(os.Environ(), "CHAOS_WALK="+walkerScript)
	if err := c.Start(); err != nil {
		return fmt.Errorf("chaos: start the fork-walker: %w", err)
	}
	go func() { _ = c.Wait() }()
	return nil
}
