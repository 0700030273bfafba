// Package storagelog writes the rate-limited `storage_error` log line that
// the alerts read (docs/architecture.md#log-lines-the-alerts-read): one
// line for the first unexpected storage answer of each operation, status
// and code, then at most one per period for the same, carrying how many
// answers it stands for. The elector and the lock service both write it,
// so one alert query reads both.
package storagelog

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Event is the line's `event` value; Message its `msg`.
const (
	Event   = "storage_error"
	Message = "unexpected storage answer"
)

// maxKeys bounds the limiter's memory (operations × statuses × codes).
const maxKeys = 64

// Limiter decides which unexpected answers get a line. Safe for concurrent
// use; the zero value is ready.
type Limiter struct {
	mu   sync.Mutex
	told map[string]*told
}

// told is when a key was last logged, and how many answers with it came
// since without a line.
type told struct {
	at       time.Time
	repeated int
}

// Due records one answer with op, status and code at now and says whether
// its line is due — the first for its key, or the first at least every
// after the last line — and how many answers came between (0 on the first).
func (l *Limiter) Due(now time.Time, every time.Duration, op string, status int, code string) (due bool, repeated int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := fmt.Sprintf("%s %d %s", op, status, code)
	t, ok := l.told[key]
	if ok && now.Sub(t.at) < every {
		t.repeated++
		return false, 0
	}
	if l.told == nil || len(l.told) >= maxKeys {
		l.told = map[string]*told{}
	}
	if ok {
		repeated = t.repeated
	}
	l.told[key] = &told{at: now}
	return true, repeated
}

// Write writes the line: WARN, with op, status (0 when no answer came),
// code (storage's error code, or timeout/error), message (never a URL) and
// repeated; args are added after them.
func Write(log *slog.Logger, op string, status int, code, message string, repeated int, args ...any) {
	log.Warn(Message, append([]any{"event", Event, "op", op, "status", status, "code", code, "message", message,
		"repeated", repeated}, args...)...)
}
