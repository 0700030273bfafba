package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capSysPtrace is CAP_SYS_PTRACE's bit in /proc/self/status CapEff: with it,
// hidepid hides nothing.
const capSysPtrace = 19

// ProcHidden reports, with the reason, when /proc may hide processes from
// this one: /proc is mounted with hidepid other than off (1/noaccess,
// 2/invisible, 4/ptraceable) and this process has neither CAP_SYS_PTRACE
// nor the mount's gid= group. A process tree read from such a /proc misses
// every member that changed its user (a set-user-ID helper): the group must
// then be a cgroup, whose cgroup.procs lists every member.
func ProcHidden() (string, bool) {
	opts, err := procMountOptions()
	if err != nil {
		return fmt.Sprintf("cannot read how /proc is mounted: %v", err), true
	}
	hide, gid := "", -1
	for _, o := range strings.Split(opts, ",") {
		switch k, v, _ := strings.Cut(o, "="); k {
		case "hidepid":
			hide = v
		case "gid":
			gid, _ = strconv.Atoi(v)
		}
	}
	if hide == "" || hide == "0" || hide == "off" {
		return "", false
	}
	if hasCap(capSysPtrace) {
		return "", false
	}
	if gid >= 0 {
		if groups, _ := os.Getgroups(); containsInt(groups, gid) || os.Getegid() == gid {
			return "", false
		}
	}
	return fmt.Sprintf("/proc is mounted with hidepid=%s and this process (uid %d) has neither CAP_SYS_PTRACE nor its gid= group", hide, os.Geteuid()), true
}

// ProcForeign reports, with the reason, when /proc is not this process's
// pid namespace's (`unshare -p -f` without --mount-proc): /proc/self then
// names another pid than getpid, and every pid read from /proc — children,
// parents, process groups — is another namespace's, which a signal from
// here would take for one of its own. The group cannot be tracked by such
// a /proc, and Start refuses (ErrProcForeign).
func ProcForeign() (string, bool) {
	link, err := os.Readlink("/proc/self")
	if err != nil {
		return fmt.Sprintf("cannot read /proc/self: %v", err), true
	}
	if link != strconv.Itoa(os.Getpid()) {
		return fmt.Sprintf("/proc belongs to another pid namespace (this process is pid %d, /proc/self says %s)", os.Getpid(), link), true
	}
	return "", false
}

// procMountOptions are the super options of the /proc mount this process
// sees ("rw,hidepid=invisible,...").
func procMountOptions() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	opts, found := "", false
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		f, tail := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(f) >= 5 && f[4] == "/proc" && len(tail) >= 3 && tail[0] == "proc" {
			opts, found = tail[2], true // the last mount on /proc is the one seen
		}
	}
	if !found {
		return "", errors.New("no proc mounted on /proc")
	}
	return opts, nil
}

// hasCap reports whether bit is in this process's effective capabilities.
func hasCap(bit uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && m&(1<<bit) != 0
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
