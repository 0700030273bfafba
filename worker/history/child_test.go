package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/history"
)

func TestNewChildRecord_FollowsTheContract(t *testing.T) {
	start := time.Now()
	at := start.Add(time.Second)
	tests := []struct {
		name string
		ev   history.ChildEvent
		want string // the record's JSON without t
	}{
		{"started", history.ChildEvent{Kind: history.EventChildStarted, Time: at, Term: 7, PID: 4242},
			`{"mono_ns":1000000000,"identity":"w1","event":"child_started","term":7,"pid":4242}`},
		{"exited 0: exit_code present although zero", history.ChildEvent{Kind: history.EventChildExited, Time: at, Term: 7, PID: 4242, ExitCode: 0, Cause: history.CauseExited},
			`{"mono_ns":1000000000,"identity":"w1","event":"child_exited","term":7,"pid":4242,"exit_code":0,"cause":"exited"}`},
		{"killed: signal, no exit_code", history.ChildEvent{Kind: history.EventChildExited, Time: at, Term: 7, PID: 4242, ExitCode: -1, Signal: "SIGKILL", Cause: history.CauseLeadershipEnded},
			`{"mono_ns":1000000000,"identity":"w1","event":"child_exited","term":7,"pid":4242,"signal":"SIGKILL","cause":"leadership_ended"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := history.NewChildRecord("w1", start, tt.ev)
			if _, err := time.Parse(time.RFC3339Nano, r.T); err != nil {
				t.Fatalf("t %q: %v", r.T, err)
			}
			r.T = ""
			b, _ := json.Marshal(r)
			var got, want map[string]any
			_ = json.Unmarshal(b, &got)
			_ = json.Unmarshal([]byte(tt.want), &want)
			delete(got, "t")
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Fatalf("record %s, want %s", gb, wb)
			}
		})
	}
}
