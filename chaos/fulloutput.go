package chaos

import "fmt"

// FullOutput starts a process with its stdout and stderr on /dev/full, where
// every write fails with ENOSPC, as on a full disk. A process that treats a
// failed log write as fatal, or retries it for ever, stops on its safety
// path. The shell that sets it up execs the process: the pid is the
// process's own.
type FullOutput struct {
	// Path is the file the output goes to; default /dev/full.
	Path string `json:"path"`
}

var _ Launch = (*FullOutput)(nil)

func (f *FullOutput) Kind() Kind { return KindFullOutput }

// Wrap runs argv through `sh -c 'exec "$@" >PATH 2>&1'`.
func (f *FullOutput) Wrap(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: FullOutput: empty command", ErrInvalid)
	}
	path := f.Path
	if path == "" {
		path = "/dev/full"
	}
	return append([]string{"sh", "-c", `exec "$@" >"$0" 2>&1`, path}, argv...), nil
}
