package chaos

// Launch is a fault that is a condition a process starts under — where its
// output goes, its seccomp filter, its mount or pid namespace — rather than
// one put in place and removed while it runs. Wrap returns the command line
// that starts argv under the condition; every Launch keeps the process's
// own pid where it can (it execs, it does not fork), so the process faults
// still reach it. The condition ends with the process.
type Launch interface {
	Kind() Kind
	Wrap(argv []string) ([]string, error)
}
