package supervise

import (
	"bytes"
	"os"
	"strconv"
)

// proc is what /proc/<pid>/stat says about one process.
type proc struct {
	pid, ppid, pgid, sid int
	state                byte   // R, S, D, T, t, Z, X, …
	start                uint64 // start time in clock ticks after boot: with pid, names one process for ever
}

// dead reports whether the process runs nothing any more (a zombie waiting
// for its parent, or gone).
func (p proc) dead() bool { return p.state == 'Z' || p.state == 'X' }

// stopped reports whether the process is stopped by a signal (T) or by a
// debugger (t).
func (p proc) stopped() bool { return p.state == 'T' || p.state == 't' }

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	return parseStat(b)
}

// parseStat parses a stat line: "pid (comm) state ppid pgrp session …".
// The command name may hold spaces and parentheses: the state follows the
// last ')'.
func parseStat(b []byte) (proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:bytes.IndexByte(b, '(')])))
	if err != nil {
		return proc{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgid, _ = strconv.Atoi(string(f[2]))
	p.sid, _ = strconv.Atoi(string(f[3]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return p, true
}

// processTable is one reading of every process on the host.
type processTable map[int]proc

// readProcesses reads /proc once. A process that ends during the reading is
// simply missing.
func readProcesses() processTable {
	t := processTable{}
	d, err := os.Open("/proc")
	if err != nil {
		return t
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			t[pid] = p
		}
	}
	return t
}

// childrenOf lists pid's children from /proc/<pid>/task/*/children (one
// small read per thread, no walk of all of /proc); where the kernel has no
// such file, from a reading of all of /proc.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				return childrenFromTable(pid)
			}
			continue // the thread exited meanwhile
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func childrenFromTable(parent int) []int {
	var out []int
	for _, p := range readProcesses() {
		if p.ppid == parent {
			out = append(out, p.pid)
		}
	}
	return out
}
