package supervise

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every message is built and parsed in protocol_linux.go: what String
// writes, parse reads back unchanged; anything else is refused.
func TestProtocol_EveryMessageReadsBackAsWritten(t *testing.T) {
	at := monoNow() + monoTime(3*time.Second)
	for _, c := range []control{
		{verb: ctlGroup, pid: 42},
		{verb: ctlRoot, pid: 43, start: 123456789},
		{verb: ctlCgroup, dir: "/sys/fs/cgroup/a b/blobleader-1-2-3"},
		{verb: ctlKillAt, at: at},
		{verb: ctlKill},
		{verb: ctlDone},
	} {
		got, err := parseControl(c.String())
		if err != nil || got != c {
			t.Errorf("parseControl(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	for _, r := range []report{
		{verb: rptPid, pid: 7},
		{verb: rptStatus, status: syscall.WaitStatus(9)},
		{verb: rptExecError, errno: syscall.ENOEXEC},
		{verb: rptFired, text: "the supervisor died"},
		{verb: rptError, text: "join cgroup /x: permission denied"},
	} {
		got, err := parseReport(r.String())
		if err != nil || got != r {
			t.Errorf("parseReport(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	for _, bad := range []string{"", "deadline 5000000000", "group x", "root 1", "kill-at soon", "cgroup", "7"} {
		if _, err := parseControl(bad); !errors.Is(err, errMessage) {
			t.Errorf("parseControl(%q) = %v, want errMessage", bad, err)
		}
	}
	for _, bad := range []string{"", "pid", "status -1", "exec-error E", "what 1"} {
		if _, err := parseReport(bad); !errors.Is(err, errMessage) {
			t.Errorf("parseReport(%q) = %v, want errMessage", bad, err)
		}
	}
}

// A deadline travels as an instant: read back after a while, it has not
// moved (a duration read late would have).
func TestProtocol_TheDeadlineIsAnInstant(t *testing.T) {
	killAt := time.Now().Add(time.Second)
	line := control{verb: ctlKillAt, at: monoOf(killAt)}.String()
	time.Sleep(50 * time.Millisecond) // the line waits in a pipe
	c, err := parseControl(line)
	if err != nil {
		t.Fatal(err)
	}
	// Bracketed by two readings of the clock, not compared with a third:
	// a preemption between the calls (a busy machine) moves nothing.
	before := time.Until(killAt)
	got := c.at.until()
	after := time.Until(killAt)
	if got > before+5*time.Millisecond || got < after-5*time.Millisecond {
		t.Fatalf("the deadline read back is %v from now, not between %v and %v (±5 ms) as written", got, after, before)
	}
	if !strings.HasPrefix(line, "kill-at ") {
		t.Fatalf("line %q", line)
	}
}

// holdDeadline, the loop the guard and the shim share: a kill-at past its
// instant, a kill, the end of input each say why to kill; done says not to.
func TestProtocol_HoldDeadlineSaysWhyToKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []control
		end  bool // close the input after msgs
		want string
	}{
		{"deadline", []control{{verb: ctlKillAt, at: monoNow() + monoTime(20*time.Millisecond)}}, false, "no extension"},
		{"a past instant", []control{{verb: ctlKillAt, at: monoNow() - 1}}, false, "no extension"},
		{"kill", []control{{verb: ctlKill}}, false, "stops the group"},
		{"supervisor died", nil, true, "supervisor died"},
		{"done", []control{{verb: ctlKillAt, at: monoNow() + monoTime(time.Hour)}, {verb: ctlDone}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make(chan control, len(tc.msgs))
			for _, m := range tc.msgs {
				in <- m
			}
			if tc.end {
				close(in)
			}
			got := make(chan string, 1)
			go func() { got <- holdDeadline(in, nil, nil, nil) }()
			select {
			case why := <-got:
				if (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
					t.Fatalf("holdDeadline = %q, want %q", why, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("holdDeadline did not return within 5 s")
			}
		})
	}
}
