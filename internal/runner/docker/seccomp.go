package docker

import (
	"encoding/json"
	"slices"

	"github.com/moby/profiles/seccomp"

	skripseccomp "github.com/skrip-dev/skrip/internal/runner/seccomp"
)

// securityOpt is every container's HostConfig.SecurityOpt: no new privileges, and Docker's
// own default seccomp profile (from github.com/moby/profiles, the package the engine
// builds it from) with the bwrap runner's refusals taken out of its allow rules. That
// profile lets ptrace through on kernels from 4.8; a tool never needs it.
func securityOpt() ([]string, error) {
	p := seccomp.DefaultProfile()
	for i := range p.Syscalls {
		if p.Syscalls[i].Action == "SCMP_ACT_ALLOW" {
			p.Syscalls[i].Names = slices.DeleteFunc(p.Syscalls[i].Names, func(n string) bool {
				return slices.Contains(skripseccomp.Denied, n)
			})
		}
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return len(s.Names) == 0 && s.Name == "" })
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return []string{"no-new-privileges", "seccomp=" + string(b)}, nil
}
