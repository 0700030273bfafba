package chaos

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NoClone3 starts a process under a seccomp filter that answers clone3 with
// ENOSYS and allows every other call, as Docker's default seccomp profile
// does (so that C libraries fall back to clone). Go's
// SysProcAttr.UseCgroupFD (CLONE_INTO_CGROUP) needs clone3 and has no
// fallback: every start that uses it fails. The filter is inherited by
// everything the process starts. Helper is a program that installs the
// filter (InstallNoClone3) and execs its arguments: test/cmd/noclone3.
type NoClone3 struct {
	Helper string `json:"helper"` // path of the helper program
}

var _ Launch = (*NoClone3)(nil)

func (f *NoClone3) Kind() Kind { return KindNoClone3 }

// Wrap runs argv through the helper.
func (f *NoClone3) Wrap(argv []string) ([]string, error) {
	if f.Helper == "" || len(argv) == 0 {
		return nil, fmt.Errorf("%w: NoClone3 needs a Helper and a command", ErrInvalid)
	}
	return append([]string{f.Helper, "--"}, argv...), nil
}

// sysClone3 is clone3's number on the architectures we build for (435 on
// amd64 and arm64 alike).
const sysClone3 = 435

// InstallNoClone3 installs, for every thread of this process and for all it
// will exec, the seccomp filter of NoClone3. It sets no_new_privs (which
// seccomp requires without CAP_SYS_ADMIN). The caller should exec at once.
func InstallNoClone3() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("%w: NoClone3 on %s", ErrInvalid, runtime.GOARCH)
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		nr   = 0 // offsetof(struct seccomp_data, nr)
		arOf = 4 // offsetof(struct seccomp_data, arch)
	)
	filter := []unix.SockFilter{
		{Code: ld, K: arOf},
		{Code: jeq, Jt: 0, Jf: 3, K: arch},
		{Code: ld, K: nr},
		{Code: jeq, Jt: 0, Jf: 1, K: sysClone3},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("chaos: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("chaos: seccomp(SET_MODE_FILTER): %w", e)
	}
	return nil
}

// Clone3Refused reports whether this process may not call clone3: it asks
// with a size of 0, which the kernel answers EINVAL when clone3 is there
// (nothing is created) and a filter or an old kernel answers ENOSYS.
func Clone3Refused() bool {
	_, _, e := unix.Syscall(sysClone3, 0, 0, 0)
	return e == unix.ENOSYS
}
