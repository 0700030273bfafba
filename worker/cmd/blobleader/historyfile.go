package main

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/blobleader/blobleader/worker/history"
)

// openHistoryFile opens the --history file, when --history names one, before
// the worker listens or touches storage. A path the worker cannot append to
// is a configuration error (exit 2 naming the flag), not a runtime failure:
// the operator must fix the flag, and nothing has been written yet.
func openHistoryFile(path string) (*history.File, error) {
	if path == "" || path == "blob" {
		return nil, nil
	}
	f, err := history.OpenFile(path)
	if err != nil {
		if why := unusablePath(err); why != "" {
			return nil, usagef("invalid --history %q: %s; must be a writable file in an existing directory, or `blob`", path, why)
		}
		return nil, err
	}
	return f, nil
}

// unusablePath says why open failed when the path itself is the problem, and
// "" for other failures (too many open files, I/O errors).
func unusablePath(err error) string {
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "it is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "a parent is not a directory"
	case errors.Is(err, fs.ErrNotExist):
		return "its directory does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "not writable (permission denied)"
	case errors.Is(err, syscall.EROFS):
		return "on a read-only file system"
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		return "not a usable path (" + errors.Unwrap(err).Error() + ")"
	}
	return ""
}
