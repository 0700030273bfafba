package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse_SampleDefaultsAndHarnessFlags(t *testing.T) {
	// The flags test/cluster passes every worker must be accepted.
	o, err := parse([]string{
		"--connection-string", "UseDevelopmentStorage=true", "--identity", "w1",
		"--lease-duration", "15s", "--renew-deadline", "15s", "--renew-interval", "10s", "--retry-period", "20s",
		"--tick", "1s", "--shutdown-grace", "5s", "--listen", "127.0.0.1:0", "--history", "/tmp/h.jsonl", "--log-format", "json",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.lease != 15*time.Second || o.renewEvery != 10*time.Second || o.acquireEvery != 20*time.Second || o.identity != "w1" {
		t.Errorf("options = %+v, want the sample's 15s/10s/20s for w1", o)
	}
}

func TestParse_RejectsWithAUsageError(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no storage", []string{}, "--connection-string"},
		{"lease too short", []string{"--connection-string", "x", "--lease-duration", "10s"}, "--lease-duration"},
		{"zero retry", []string{"--connection-string", "x", "--retry-period", "0s"}, "--retry-period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.args)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse(%v) = %v, want a usage error naming %s", tt.args, err, tt.want)
			}
		})
	}
}
