package cluster

import (
	"slices"
	"testing"
)

func TestModeArgs(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		args    []string
		want    []string
	}{
		{"worker mode is untouched", nil, []string{"--tick", "500ms", "--identity", "w1"}, []string{"--tick", "500ms", "--identity", "w1"}},
		{"run mode: run first, no --tick, the command after --", []string{"cmd", "--flag"}, []string{"--identity", "w1", "--tick", "500ms", "--listen", "x"},
			[]string{"run", "--identity", "w1", "--listen", "x", "--", "cmd", "--flag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (workerOpts{command: tt.command}).modeArgs(tt.args); !slices.Equal(got, tt.want) {
				t.Fatalf("modeArgs = %q, want %q", got, tt.want)
			}
		})
	}
}
