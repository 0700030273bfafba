package storagelog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

func TestLimiter_FirstAtOnceThenOncePerPeriodWithTheCount(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at       time.Duration
		op       string
		code     string
		due      bool
		repeated int
	}{
		{0, "acquire", "AuthenticationFailed", true, 0},
		{time.Second, "acquire", "AuthenticationFailed", false, 0},
		{2 * time.Second, "acquire", "AuthenticationFailed", false, 0},
		{3 * time.Second, "poll", "AuthenticationFailed", true, 0}, // another op: its own line
		{15 * time.Second, "acquire", "AuthenticationFailed", true, 2},
		{16 * time.Second, "acquire", "AuthenticationFailed", false, 0},
	}
	for i, s := range steps {
		due, rep := l.Due(t0.Add(s.at), 15*time.Second, s.op, 403, s.code)
		if due != s.due || rep != s.repeated {
			t.Fatalf("step %d (%s at %v): due %v repeated %d, want %v %d", i, s.op, s.at, due, rep, s.due, s.repeated)
		}
	}
}

func TestWrite_TheFieldsTheAlertsRead(t *testing.T) {
	var b bytes.Buffer
	Write(slog.New(slog.NewJSONHandler(&b, nil)), "acquire", 403, "AuthenticationFailed", "Server failed to authenticate the request.", 4)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"level": "WARN", "msg": "unexpected storage answer", "event": "storage_error", "op": "acquire",
		"status": float64(403), "code": "AuthenticationFailed", "message": "Server failed to authenticate the request.", "repeated": float64(4)}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, m[k], v, b.String())
		}
	}
}
