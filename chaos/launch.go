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

// Launches starts a process under several conditions at once, the first
// outermost: Launches{a, b}.Wrap(argv) is a.Wrap(b.Wrap(argv)).
type Launches []Launch

var _ Launch = Launches(nil)

// Kind is the innermost condition's (the one closest to the process).
func (l Launches) Kind() Kind {
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1].Kind()
}

// Wrap wraps argv in each condition, the last first.
func (l Launches) Wrap(argv []string) ([]string, error) {
	var err error
	for i := len(l) - 1; i >= 0; i-- {
		if argv, err = l[i].Wrap(argv); err != nil {
			return nil, err
		}
	}
	return argv, nil
}
