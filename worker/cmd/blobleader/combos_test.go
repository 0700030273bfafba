package main

import (
	"strings"
	"testing"
)

// Flags that are each in range but cannot work together are a configuration
// error naming both flags and the rule, in every mode: a leader stepped down
// by its own watchdog every few seconds, or a storage call capped below what
// real storage answers in, would otherwise run (and flap, or never lead)
// with /healthz green.
func TestWorker_FlagCombinationsThatCannotWorkExitTwoNamingBoth(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	tests := []struct {
		name string
		args []string
		want []string // both flags and a word of the rule
	}{
		{"worker: tick above the watchdog", []string{conn, "--tick=30s"}, []string{"--tick", "--watchdog-timeout", "heartbeat"}},
		{"worker: an append's timeout above the watchdog", []string{conn, "--watchdog-timeout=3s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"worker: a tick plus an append's timeout above the watchdog", []string{conn, "--tick=7s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"shards: a tick plus an append's timeout above the watchdog", []string{conn, "--shards=4", "--tick=7s"}, []string{"--tick", "--watchdog-timeout", "request timeout"}},
		{"worker: request timeout below what storage answers in", []string{conn, "--renew-interval=50ms"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
		{"worker: request timeout from the deadline below the floor", []string{conn, "--renew-deadline=1200ms", "--renew-interval=400ms"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
		{"shards: tick above the watchdog", []string{conn, "--shards=4", "--tick=30s"}, []string{"--tick", "--watchdog-timeout"}},
		{"shards: poll period above the watchdog", []string{conn, "--shards=4", "--retry-period=20s"}, []string{"--retry-period", "--watchdog-timeout", "coordinator"}},
		{"shards: request timeout below the floor", []string{conn, "--shards=4", "--renew-interval=50ms"}, []string{"--renew-interval", "--renew-deadline"}},
		{"run: request timeout below the floor", []string{"run", conn, "--renew-interval=50ms", "--", "/bin/true"}, []string{"--renew-interval", "--renew-deadline", "request timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := expectUsageError(t, nil, tt.want[0], withListen(tt.args)...)
			for _, w := range tt.want[1:] {
				if !strings.Contains(out, w) {
					t.Fatalf("message does not name %q:\n%s", w, out)
				}
			}
		})
	}
}

// withListen puts --listen before run's "--" (expectUsageError appends it).
func withListen(args []string) []string {
	if len(args) > 0 && args[0] == "run" {
		for i, a := range args {
			if a == "--" {
				out := append([]string{}, args[:i]...)
				out = append(out, "--listen=127.0.0.1:0")
				return append(out, args[i:]...)
			}
		}
	}
	return args
}
