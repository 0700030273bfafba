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

// descendants returns every process below root (root excluded), skipping
// the subtrees of the pids in prune. Because the supervisor is a child
// subreaper, whatever its command leaves behind is re-parented to it, so
// its descendants are everything the command started, whatever process
// group or session they moved to.
func (t processTable) descendants(root int, prune map[int]bool) []proc {
	if root <= 0 {
		return nil
	}
	children := map[int][]int{}
	for pid, p := range t {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if prune[c] {
				continue
			}
			out = append(out, t[c])
			queue = append(queue, c)
		}
	}
	return out
}

// ownChildren lists this process's children from
// /proc/self/task/*/children (cheap: no walk of all of /proc); where the
// kernel has no such file, from a reading of all of /proc.
func ownChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			return childrenFromTable()
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

func childrenFromTable() []int {
	var out []int
	for _, p := range readProcesses() {
		if p.ppid == os.Getpid() {
			out = append(out, p.pid)
		}
	}
	return out
}
