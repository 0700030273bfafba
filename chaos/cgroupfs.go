package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The cgroup v2 file system as the faults that confine, nest or inspect
// processes by cgroup read it (Confine, ShimKill).

// cgroup2Mount is where the cgroup v2 hierarchy is mounted in this mount
// namespace (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host).
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("chaos: %w", err)
	}
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		f, tail := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(f) >= 5 && len(tail) >= 1 && tail[0] == "cgroup2" {
			return f[4], nil
		}
	}
	return "", fmt.Errorf("%w: no cgroup v2 hierarchy mounted", ErrInvalid)
}

// cgroupOf is the directory of pid's cgroup in the v2 hierarchy.
func cgroupOf(pid int) (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: pid %d: %v", ErrNotRunning, pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Join(mount, p), nil
		}
	}
	return "", fmt.Errorf("%w: pid %d is in no cgroup v2", ErrInvalid, pid)
}

// cgroupProcs lists the processes of one cgroup (not its children).
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// cgroupPopulated reports whether a process runs anywhere in dir's subtree
// (cgroup.events "populated 1").
func cgroupPopulated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && bytes.Contains(b, []byte("populated 1"))
}

// cgroupKillTree SIGKILLs every process in dir's subtree (cgroup.kill, Linux
// ≥ 5.14: the kernel's kill reaches a process that forks meanwhile), waits
// up to timeout for it to empty, and removes the directories, deepest
// first.
func cgroupKillTree(dir string, timeout time.Duration) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("chaos: cgroup.kill %s: %w", dir, err)
	}
	for deadline := time.Now().Add(timeout); cgroupPopulated(dir); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: cgroup %s still populated %v after cgroup.kill", ErrStillAlive, dir, timeout)
		}
	}
	return removeCgroupTree(dir)
}

// removeCgroupTree removes dir and every cgroup below it, deepest first (a
// cgroup with children cannot be removed).
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for i := 0; ; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if i == 100 {
			return fmt.Errorf("chaos: remove cgroup %s: %w", dir, err)
		}
		time.Sleep(5 * time.Millisecond) // the kernel lets go of members that just exited
	}
}
