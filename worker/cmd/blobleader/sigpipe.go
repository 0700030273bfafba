package main

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// brokenPipes counts the writes that found no reader (SIGPIPE): a log line
// to a stdout/stderr pipe whose reader exited (`| tee`, a log shipper, an
// ssh session). The line is lost; the process runs on.
var brokenPipes atomic.Uint64

// catchSIGPIPE makes a write to a broken pipe fail with EPIPE instead of
// killing the process. The Go runtime kills a program that writes to a
// broken stdout or stderr unless SIGPIPE is notified; ignoring it instead
// would pass SIG_IGN on to the command `run` starts (a caught signal is
// reset to its default action by exec, an ignored one is not).
func catchSIGPIPE() {
	c := make(chan os.Signal, 16)
	signal.Notify(c, syscall.SIGPIPE)
	go func() {
		for range c {
			brokenPipes.Add(1)
		}
	}()
}
