package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds reads a process's user+system CPU time from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU takes fields 14 (utime) and 15 (stime) of a stat line; the
// command name (field 2) may contain spaces, so count from the last ')'.
func parseStatCPU(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bench: malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 → f[11], stime f[12].
	if len(f) < 13 {
		return 0, errors.New("bench: short /proc stat")
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (ut + st) / clockTicks, nil
}

// RSSBytes reads VmRSS from /proc/<pid>/status.
func RSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

func parseVmRSS(b []byte) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("bench: no VmRSS in /proc status")
}

// WorkerProc is a worker process found by its command line.
type WorkerProc struct {
	Pid    int
	Listen string // its --listen address
}

// FindWorker finds the running process started with --identity identity and
// a --history file inside dir (test/cluster does not export pids or listen
// addresses; its workers' command lines carry both).
func FindWorker(dir, identity string) (WorkerProc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return WorkerProc{}, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if flagValue(args, "--identity") != identity {
			continue
		}
		if h := flagValue(args, "--history"); h == "" || filepath.Dir(h) != filepath.Clean(dir) {
			continue
		}
		return WorkerProc{Pid: pid, Listen: flagValue(args, "--listen")}, nil
	}
	return WorkerProc{}, fmt.Errorf("bench: no process with --identity %s under %s", identity, dir)
}

func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		if a == name && i+1 < len(args) {
			v = args[i+1] // the last one wins, as with package flag
		} else if s, ok := strings.CutPrefix(a, name+"="); ok {
			v = s
		}
	}
	return v
}

func osGetpid() int { return os.Getpid() }
