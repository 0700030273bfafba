package main

import (
	"strings"
	"testing"
)

func TestWorker_TakeoverFlagsExitTwoNamingTheRule(t *testing.T) {
	t.Parallel()
	conn := "--connection-string=" + goodConn
	fast := []string{conn, "--renew-deadline=2s", "--renew-interval=500ms", "--retry-period=500ms"}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string // each must appear in the message
	}{
		{"T below two renew intervals", nil, append(fast, "--takeover-after=900ms"), []string{"--takeover-after", "2 × --renew-interval and --renew-interval + 2 × request timeout (1.5s)"}},
		{"B below D + timeout + margin", nil, append(fast, "--takeover-after=2s", "--break-period=2s"), []string{"--break-period", "--renew-deadline + request timeout"}},
		{"B exactly D + timeout + margin", nil, append(fast, "--takeover-after=2s", "--break-period=3s"), []string{"--break-period", "storage counts break periods in whole seconds"}},
		{"B not whole seconds", nil, append(fast, "--takeover-after=2s", "--break-period=4500ms"), []string{"--break-period", "whole number of seconds"}},
		{"B above 60s", nil, append(fast, "--takeover-after=2s", "--break-period=61s"), []string{"--break-period", "at most 1m0s"}},
		{"B without T", nil, append(fast, "--break-period=3s"), []string{"--break-period", "--takeover-after is 0"}},
		{"T + B not below L (default deadline)", nil, []string{conn, "--takeover-after=6s"}, []string{"--takeover-after", "less than --lease-duration"}},
		{"env twin", []string{"BLOBLEADER_TAKEOVER_AFTER=900ms"}, fast, []string{"--takeover-after"}},
		{"run: B must cover the kill grace", nil, append([]string{"run"}, append(fast, "--takeover-after=2s", "--break-period=5s", "--kill-grace=1s", "--", "true")...), []string{"--break-period", "after the deadline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"AZURE_STORAGE_CONNECTION_STRING="}, tt.env...)
			code, out := runWorkerCmd(t, env, tt.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
