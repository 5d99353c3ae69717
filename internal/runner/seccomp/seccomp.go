// Package seccomp builds the system-call filter of the bwrap runner: the calls Docker's
// default profile refuses an unprivileged container (keyrings, ptrace, perf, bpf, mounts,
// namespaces, kernel modules, clocks, …) fail with EPERM. Program is the BPF program
// bubblewrap's --seccomp loads.
package seccomp

import (
	"encoding/binary"
	"fmt"
	"slices"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The program is built by github.com/elastic/go-seccomp-bpf: pure Go (no cgo, no
// libseccomp to install beside the binary), maintained, with syscall tables for amd64 and
// arm64 and argument conditions. libseccomp-golang would need cgo and libseccomp-dev.

// Denied are the calls that fail with EPERM, by their names in the kernel's tables; a
// name the machine's architecture lacks (iopl on arm64, say) is left out. It is the list
// of Docker's default profile that an unprivileged container cannot make (its
// capability-gated groups, none of which a tool has), plus ptrace, which that profile
// allows on new kernels and a tool never needs.
var Denied = []string{
	// keyrings: the kernel's key store is not namespaced by uid alone
	"add_key", "request_key", "keyctl",
	// reading or steering other processes
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	// kernel attack surface no tool needs
	"perf_event_open", "bpf", "userfaultfd", "lookup_dcookie", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"fanotify_init", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "modify_ldt", "uselib", "ustat", "sysfs", "_sysctl",
	"syslog", "vhangup", "nfsservctl",
	// mounts and namespaces
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr",
	"sethostname", "setdomainname",
	// the machine: modules, kexec, power, swap, quotas, accounting, clocks
	"init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms", "query_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "quotactl", "quotactl_fd", "acct",
	"settimeofday", "clock_settime", "clock_adjtime",
	// NUMA placement (CAP_SYS_NICE in Docker's profile)
	"mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages", "set_mempolicy_home_node",
}

// namespaceFlags are clone's flags that make a namespace: CLONE_NEWNS, CLONE_NEWCGROUP,
// CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID and CLONE_NEWNET.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// personalities are the personality(2) values Docker's profile allows: the query
// (0xffffffff), PER_LINUX, PER_LINUX32, UNAME26 and both. Others (ADDR_NO_RANDOMIZE,
// READ_IMPLIES_EXEC, …) weaken the process's own hardening.
var personalities = []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// Policy is the filter as go-seccomp-bpf's policy: every call is allowed but the
// Denied ones; clone with a namespace flag and the other personalities fail with EPERM;
// clone3 fails with ENOSYS, as in Docker, because its flags sit behind a pointer the
// filter cannot read, and ENOSYS makes the C library fall back to clone.
func Policy() (*libseccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range Denied {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	notAllowed := make(libseccomp.ArgumentConditions, 0, len(personalities))
	for _, p := range personalities {
		notAllowed = append(notAllowed, libseccomp.Condition{Argument: 0, Operation: libseccomp.NotEqual, Value: p})
	}
	return &libseccomp.Policy{
		DefaultAction: libseccomp.ActionAllow,
		Syscalls: []libseccomp.SyscallGroup{
			{Action: libseccomp.ActionErrno, Names: names, NamesWithCondtions: []libseccomp.NameWithConditions{
				{Name: "clone", Conditions: libseccomp.ArgumentConditions{{Argument: 0, Operation: libseccomp.BitsSet, Value: namespaceFlags}}},
				{Name: "personality", Conditions: notAllowed},
			}},
			{Action: libseccomp.ActionErrno | libseccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}, nil
}

// Program is the filter as the bytes of a struct sock_filter array in the machine's byte
// order: what bubblewrap reads from its --seccomp descriptor.
func Program() ([]byte, error) {
	p, err := Policy()
	if err != nil {
		return nil, err
	}
	insts, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp policy: %w", err)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	// go-seccomp-bpf sends a call of another ABI than the policy's (an i386 int 0x80 from
	// an amd64 process) to the default action, allow, where its numbers would slip past
	// every rule: these three instructions, written here because the library has no
	// option for it, refuse such calls first.
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(libseccomp.ActionErrno) | uint32(unix.ENOSYS)},
	}
	raw, err := bpf.Assemble(slices.Concat(guard, insts))
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp program: %w", err)
	}
	if len(raw) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("the seccomp program has %d instructions, more than the kernel's %d", len(raw), unix.BPF_MAXINSNS)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
