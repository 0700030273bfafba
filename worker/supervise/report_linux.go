package supervise

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blobleader/blobleader/worker/internal/dropqueue"
)

// reportFlush bounds how long a guard or a shim waits, as it exits, for its
// last reports to be written: they come after its work is done, and an
// output that does not move must not keep it alive.
const reportFlush = 200 * time.Millisecond

// reporter writes a helper process's (guard, shim) lines to its stderr
// through a bounded queue: printf never blocks, and a line that cannot be
// queued is dropped. Writes that fail (EPIPE once SIGPIPE is caught,
// ENOSPC on a full disk) are lost and counted too, though a helper has no
// metrics to show the count in: the queue's next hole line says it, if the
// output takes lines again.
type reporter struct {
	out *os.File
	q   *dropqueue.Queue[string]
}

func newReporter(out *os.File) *reporter {
	r := &reporter{out: out}
	r.q = dropqueue.New(64, r.write, func(n, total uint64) {
		_ = r.write(fmt.Sprintf("%s: %d line(s) dropped (%d in all)", filepath.Base(os.Args[0]), n, total))
	})
	return r
}

func (r *reporter) write(line string) error {
	_, err := r.out.WriteString(line + "\n")
	return err
}

// printf queues one line; it never blocks.
func (r *reporter) printf(format string, args ...any) { _ = r.q.Put(fmt.Sprintf(format, args...)) }

// close waits up to d for the queued lines to be written.
func (r *reporter) close(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, _ = r.q.Close(ctx)
}
