package seccomp

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// vm runs the assembled Program on a struct seccomp_data in golang.org/x/net/bpf's
// interpreter, which loads words big-endian: each 32-bit field is laid out so that the
// program reads the value the kernel would hand it on this machine.
type vm struct {
	t  *testing.T
	m  *bpf.VM
	id uint32
}

func newVM(t *testing.T) vm {
	b, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%8 != 0 {
		t.Fatalf("program of %d bytes is not whole sock_filters", len(b))
	}
	var raw []bpf.RawInstruction
	for i := 0; i < len(b); i += 8 {
		raw = append(raw, bpf.RawInstruction{Op: binary.NativeEndian.Uint16(b[i:]), Jt: b[i+2], Jf: b[i+3], K: binary.NativeEndian.Uint32(b[i+4:])})
	}
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the program does not disassemble")
	}
	m, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := arch.GetInfo("")
	return vm{t: t, m: m, id: uint32(info.ID)}
}

func (v vm) run(archID, nr uint32, args ...uint64) uint32 {
	v.t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], archID)
	for i, a := range args {
		lo, hi := 16+8*i, 20+8*i
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big-endian machine
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(data[lo:], uint32(a))
		binary.BigEndian.PutUint32(data[hi:], uint32(a>>32))
	}
	got, err := v.m.Run(data)
	if err != nil {
		v.t.Fatal(err)
	}
	return uint32(got)
}

func TestProgram(t *testing.T) {
	v := newVM(t)
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	nr := func(name string) uint32 {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no syscall %s on %s", name, info.Name)
		}
		return uint32(n)
	}
	const thread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	tests := []struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}{
		{"read", v.id, nr("read"), nil, allow},
		{"openat", v.id, nr("openat"), nil, allow},
		{"keyctl", v.id, nr("keyctl"), nil, eperm},
		{"ptrace", v.id, nr("ptrace"), nil, eperm},
		{"fork by clone", v.id, nr("clone"), []uint64{uint64(unix.SIGCHLD)}, allow},
		{"a thread by clone", v.id, nr("clone"), []uint64{thread}, allow},
		{"clone with garbage above 32 bits", v.id, nr("clone"), []uint64{1<<40 | uint64(unix.SIGCHLD)}, allow},
		{"clone of a user namespace", v.id, nr("clone"), []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone of a net namespace", v.id, nr("clone"), []uint64{unix.CLONE_NEWNET}, eperm},
		{"clone of a mount namespace", v.id, nr("clone"), []uint64{unix.CLONE_NEWNS | thread}, eperm},
		{"clone3", v.id, nr("clone3"), nil, enosys},
		{"personality query", v.id, nr("personality"), []uint64{0xffffffff}, allow},
		{"personality linux", v.id, nr("personality"), []uint64{0}, allow},
		{"personality without ASLR", v.id, nr("personality"), []uint64{0x0040000} /* ADDR_NO_RANDOMIZE */, eperm},
		{"unshare", v.id, nr("unshare"), []uint64{unix.CLONE_NEWUSER}, eperm},
		{"another ABI", uint32(arch.I386.ID), uint32(arch.I386.SyscallNames["keyctl"]), nil, enosys},
		{"another ABI's read", uint32(arch.I386.ID), 3, nil, enosys},
	}
	if info.ID == arch.X86_64.ID {
		tests = append(tests, struct {
			name string
			arch uint32
			nr   uint32
			args []uint64
			want uint32
		}{"x32", v.id, 0x40000000 | uint32(arch.X32.SyscallNames["keyctl"]), nil, enosys})
	}
	for _, tc := range tests {
		if got := v.run(tc.arch, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	for _, name := range Denied {
		if n, ok := info.SyscallNames[name]; ok {
			if got := v.run(v.id, uint32(n)); got != eperm {
				t.Errorf("%s: %#x, want EPERM", name, got)
			}
		}
	}
}

// TestDeniedNamesExist: a misspelt name would be left out silently on every machine;
// on amd64 every name of the list is a real call.
func TestDeniedNamesExist(t *testing.T) {
	for _, name := range Denied {
		if _, ok := arch.X86_64.SyscallNames[name]; !ok {
			t.Errorf("%s is not an amd64 system call", name)
		}
	}
}
